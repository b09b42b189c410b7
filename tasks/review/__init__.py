"""Human verification: the review stage (queue filling), the queue, the web app and export."""

from tasks.review.stage import ReviewStage

__all__ = ["ReviewStage"]
