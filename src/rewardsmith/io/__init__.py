"""Reading samples and writing results as JSON Lines."""

from ._jsonl import Record, count_lines, read_samples, resume_point, write_result

__all__ = ["Record", "count_lines", "read_samples", "resume_point", "write_result"]
