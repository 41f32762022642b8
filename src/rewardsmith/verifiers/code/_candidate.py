"""The candidate's side of a run: the completion's program, answering calls in plain data.

Runs in the untrusted process (`_runtime` has isolated and filtered it first). Nothing here
is trusted by the other side: the program can rewrite any of it. It can only ever change the
answers it sends, and every answer is decoded by the referee as plain data (`_codec`), so
the worst it can do is answer wrongly, which its own functions could do anyway.

Test suites (`serve`): the program runs as module ``solution``; the referee is told its
top-level names (functions, classes, plain values, standard modules), then calls them:

* ``("call", name, args, kwargs)`` -> the function's result;
* ``("new", name, args, kwargs)`` -> an opaque handle to the instance (classes);
* ``("method", (handle, attribute), args, kwargs)`` -> the method's result;
* ``("attr", (handle, attribute), (), {})`` -> the attribute's value, or ``("method",)``.

Answers: ``("ok", value)``, ``("handle", n)``, ``("raised", "Type: message")``,
``("unplain", why)``. stdin/stdout programs (`run_main`) run as ``__main__`` and exit as the
interpreter would.

Either way the program's module is in `sys.modules` (dataclasses and pickle look it up), has
``__file__`` and `sys.argv` as ``python solution.py`` would set them (the sandbox writes
that file: `_runtime._source_file`), and the builtins have ``exit`` and ``quit`` (`site`
defines them; the sandbox's interpreter runs without it).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import types
from typing import Any

from ._codec import (
    MAX_BYTES,
    MAX_ITEMS,
    NotPlain,
    encode,
    encode_counted,
    receive,
    send,
    send_encoded,
)

__all__ = ["describe", "run_main", "serve"]


def describe() -> str:
    """The exception being handled, as ``Type: message`` (at most 500 characters)."""
    try:
        error = sys.exc_info()[1]
        text = f"{type(error).__name__}: {error}"
    except BaseException:
        text = "an unprintable exception"
    return text[:500]


_ENTRY_ITEMS, _ENTRY_BYTES = 4, 64
"""What one entry of the name table costs besides its name and value (its tuple, its kind),
rounded up: the table is one message, within the codec's limits."""


def _names(namespace: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """What the referee may bind: name -> ("function",) | ("class",) | ("module", name) |
    ("value", plain value). The table is one message: entries that would take it over the
    codec's limits (all of them together) are left out, like values that are not plain."""
    table: dict[str, tuple[Any, ...]] = {}
    items, size = 1, 16
    for name, value in list(namespace.items()):
        if type(name) is not str or name.startswith("__"):
            continue
        entry: tuple[Any, ...]
        cost = (_ENTRY_ITEMS, _ENTRY_BYTES + 4 * len(name))
        if isinstance(value, types.ModuleType):
            module = getattr(value, "__name__", None)
            if type(module) is not str:
                continue
            entry, cost = ("module", module), (cost[0], cost[1] + 4 * len(module))
        elif isinstance(value, type):
            entry = ("class",)
        elif callable(value):
            entry = ("function",)
        else:
            try:
                data, count = encode_counted(value, convert=True)
            except BaseException:
                continue
            entry, cost = ("value", value), (cost[0] + count, cost[1] + len(data))
        if items + cost[0] > MAX_ITEMS or size + cost[1] > MAX_BYTES:
            continue
        items, size = items + cost[0], size + cost[1]
        table[name] = entry
    return table


def _answer(namespace: dict[str, Any], handles: list[Any], request: Any) -> tuple[Any, ...]:
    op, target, args, kwargs = request
    try:
        if op in ("call", "new"):
            result = namespace[target](*args, **kwargs)
            if op == "new":
                handles.append(result)
                return ("handle", len(handles) - 1)
        elif op == "attr":
            result = getattr(handles[target[0]], target[1])
            if callable(result):
                return ("method",)
        else:
            result = getattr(handles[target[0]], target[1])(*args, **kwargs)
    except BaseException:
        return ("raised", describe())
    return ("ok", result)


def _reply(answers: int, reply: tuple[Any, ...]) -> None:
    """Send `reply`; a value that turns out not to be plain data is answered as such."""
    try:
        data = encode(reply, convert=True)
    except NotPlain as exc:
        data = encode(("unplain", str(exc)))
    except BaseException:
        data = encode(("unplain", "a value whose conversion raised " + describe()))
    send_encoded(answers, data)


class _Quitter:
    """`exit` and `quit` as `site` makes them: raise SystemExit with the code."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Use {self.name}() or Ctrl-D (i.e. EOF) to exit"

    def __call__(self, code: Any = None) -> None:
        raise SystemExit(code)


def _module(name: str, program: dict[str, Any]) -> types.ModuleType:
    """The program's module, registered as `name`, with the `sys.argv` and the builtins
    (`site`'s) that ``python solution.py`` gives a program."""
    sys.path.extend(program["path"])
    sys.argv = ["solution.py"]
    for quitter in ("exit", "quit"):
        setattr(builtins, quitter, _Quitter(quitter))
    module = types.ModuleType(name)
    module.__dict__["__builtins__"] = builtins
    module.__file__ = os.path.join(os.getcwd(), "solution.py")
    sys.modules[name] = module
    return module


def serve(program: dict[str, Any], calls: int, answers: int) -> int:
    """Run the program, tell its names, answer calls until the referee closes `calls`."""
    namespace = _module("solution", program).__dict__
    try:
        exec(compile(program["code"], "solution.py", "exec"), namespace)
    except BaseException:
        send(answers, ("broken", "raised " + describe()))
        return 0
    _reply(answers, ("loaded", _names(namespace)))
    handles: list[Any] = []
    while True:
        try:
            request = receive(calls)
        except EOFError:
            return 0
        _reply(answers, _answer(namespace, handles, request))


_C_LONG = range(-(1 << 63), 1 << 63)


def _exit_status(code: Any) -> int:
    """The status CPython exits with for ``SystemExit(code)``: an int's own value (a
    subclass's methods are not asked) as a C long, -1 (255) when it does not fit; None is 0;
    anything else is printed to stderr, 1."""
    if code is None:
        return 0
    if issubclass(type(code), int):
        value = int.__index__(code)
        return value & 0xFF if value in _C_LONG else 0xFF
    with contextlib.suppress(BaseException):
        sys.stderr.write(f"{code}\n")
    return 1


def run_main(program: dict[str, Any]) -> int:
    """Run the program as ``__main__`` and end as the interpreter would (threads joined,
    ``atexit`` handlers run); the exit status. The streams and open files are flushed after
    it, by `_runtime._candidate_process`."""
    main = _module("__main__", program)
    status = 0
    try:
        exec(compile(program["code"], "solution.py", "exec"), main.__dict__)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        with contextlib.suppress(BaseException):
            sys.__excepthook__(*sys.exc_info())
        status = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    return status
