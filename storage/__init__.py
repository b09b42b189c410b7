"""Bottom layer: artifact schemas, sharded Parquet, manifests, the image store. Imports nothing of ours."""
