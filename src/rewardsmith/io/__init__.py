"""Reading samples and writing results as JSON Lines."""

from ._jsonl import count_lines, read_samples, resume_point, write_result

__all__ = ["count_lines", "read_samples", "resume_point", "write_result"]
