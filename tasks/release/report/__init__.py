"""Static HTML reports (eval, ablation, build) with inline SVG charts: no CDN, no JavaScript."""
