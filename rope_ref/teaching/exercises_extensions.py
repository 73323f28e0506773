"""Notebook 09's checkers under the name its cells import; :mod:`rope_ref.teaching.exercises` holds every checker."""

from .exercises import check_same_score_patch, check_text_after_image, same_score_qk

__all__ = ["check_same_score_patch", "check_text_after_image", "same_score_qk"]
