"""Where the benchmarks put their results: a marked section of BENCHMARKS.md."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_section"]


def write_section(path: Path | None, name: str, body: str) -> None:
    """Print `body` between the markers of section `name` and, when `path` is given, put it
    there: in place of that section when the file has its markers, else at the end (a new
    file starts with a `# Benchmarks` heading)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body}\n{end}"
    print(block)
    if path is None:
        return
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
