"""The trusted side of a run: the dataset's tests, calling the candidate over a pipe.

Runs in the referee process, which the candidate's process cannot see, signal, trace or
read (`_runtime`). It holds the verdict pipe; the candidate never does. The tests call
stand-ins (`Remote`) for the candidate's functions and classes; each call sends plain
arguments and gets back a plain value built by `_codec.decode`, so nothing the candidate
made ever runs here. A call that does not come back with a plain value (the candidate
raised, crashed, hung, or returned something else) raises `CandidateFailed`, a
`BaseException` so that ``except Exception`` in a test does not swallow it, and the test
fails even if the test swallowed it anyway.

What the tests see:

* HumanEval (``check(candidate)``): the problem's prompt code, when given and valid Python
  (its imports and helpers, e.g. ``poly`` for ``find_zero``: dataset code, run here; if it
  raises, the sample is invalid), then the entry point bound to the candidate's function,
  then the test code and ``check(<entry point>)``;
* assert lists: the candidate's top-level functions, classes and plain values by name
  (never a dunder name, nor one that would shadow a builtin, but for the task's function
  named like one, `_task_builtins`), the standard modules it imported (this process's own
  copies, for those already loaded here: the zygote preloads the common ones), then
  ``setup``, then each assertion in a fresh copy of that scope.

Dataset code runs as module ``solution``, registered in this process's `sys.modules` (a
fresh module for the prompt and setup, and for each test: `_module`), as ``python
solution.py`` would run it.

Tests are compiled with ``optimize=0``: their asserts run whatever the process's flags.
Arguments are copies: a test cannot see the candidate mutate them in place. An argument that
is not plain data (a function, an object of the test's own) cannot cross. In a HumanEval test,
whose scope is dataset code only, that makes the sample `invalid` (the reward cannot judge such
tests) unless the argument holds a stand-in for a candidate object, which the candidate chose
to make; in an assert list, whose scope holds the candidate's names, the call fails. An
argument that is plain but over the codec's limits (too deep, too many values, too large)
fails the call in both: it may be built from the candidate's own answers (a round trip).

Records written on the verdict pipe, each prefixed with the run's token: ``start`` (the
candidate's process is up), ``test <i> <0|1> <reason hex or ->`` once per test,
``invalid <reason hex>`` (the tests cannot be run), and ``done <n>`` last.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import sys
import types
from collections.abc import Callable
from typing import Any

from ._codec import NotPlain, TooLarge, receive, send

__all__ = ["CandidateFailed", "Link", "Remote", "referee"]


class CandidateFailed(BaseException):
    """A call to the candidate did not come back with a plain value."""


class _Unsupported(BaseException):
    """The tests passed the candidate something that cannot cross the boundary."""


class Link:
    """The referee's end of the call pipes; remembers the first failed call of a test."""

    def __init__(self, calls: int, answers: int) -> None:
        self.calls = calls
        self.answers = answers
        self.failure: str | None = None
        self.ended: str | None = None
        self.dataset_arguments = True
        """Whether every argument the tests pass comes from dataset code alone (HumanEval:
        prompt and test); assert lists also see the candidate's names, so a strange
        argument there may be the candidate's doing."""

    def fail(self, reason: str) -> CandidateFailed:
        if self.failure is None:
            self.failure = reason
        return CandidateFailed(reason)

    def receive(self) -> Any:
        """The candidate's next message; raises `CandidateFailed` if there is none."""
        if self.ended:
            raise self.fail(self.ended)
        try:
            return receive(self.answers)
        except EOFError:
            self.ended = "the candidate's process ended"
        except NotPlain as exc:
            self.ended = f"the candidate sent something that is not plain data: {exc}"
        except MemoryError:
            self.ended = "the candidate's answer is too large"
        raise self.fail(self.ended)

    def request(self, op: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One call; the answer ``(kind, *rest)`` or `CandidateFailed`."""
        if self.ended:
            raise self.fail(self.ended)
        try:
            send(self.calls, (op, target, args, kwargs))
        except TooLarge as exc:
            # Plain but too large or deep: possibly built from the candidate's own answers
            # (a round trip), so never the dataset's fault: a failed call.
            raise self.fail(f"an argument is over the limits: {exc}") from None
        except NotPlain as exc:
            if self.dataset_arguments and not _holds_remote((args, kwargs)):
                raise _Unsupported(f"the tests pass the candidate {exc}") from None
            raise self.fail(f"an argument is not plain data: {exc}") from None
        except OSError:
            self.ended = "the candidate's process ended"
            raise self.fail(self.ended) from None
        answer = self.receive()
        if type(answer) is not tuple or not answer or type(answer[0]) is not str:
            self.ended = "the candidate's answer is malformed"
            raise self.fail(self.ended)
        kind = answer[0]
        if kind == "raised" and len(answer) == 2 and type(answer[1]) is str:
            raise self.fail(f"raised {answer[1]}")
        if kind == "unplain" and len(answer) == 2 and type(answer[1]) is str:
            raise self.fail(f"returned {answer[1]}")
        return answer


def _holds_remote(value: Any, depth: int = 0) -> bool:
    if isinstance(value, (Remote, RemoteObject)):
        return True
    if depth < 50 and isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_remote(v, depth + 1) for v in value)
    if depth < 50 and isinstance(value, dict):
        return any(_holds_remote(v, depth + 1) for v in (*value.keys(), *value.values()))
    return False


class Remote:
    """A stand-in for one of the candidate's functions (or classes)."""

    def __init__(self, link: Link, name: str, is_class: bool = False) -> None:
        self._link = link
        self._class = is_class
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        op = "new" if self._class else "call"
        answer = self._link.request(op, self.__name__, args, kwargs)
        if op == "new" and answer[0] == "handle" and len(answer) == 2 and type(answer[1]) is int:
            return RemoteObject(self._link, answer[1], self.__name__)
        if op == "call" and answer[0] == "ok" and len(answer) == 2:
            return answer[1]
        raise self._link.fail("the candidate's answer is malformed")

    def __repr__(self) -> str:
        return f"<candidate's {self.__name__}>"


class RemoteObject:
    """A stand-in for an instance of a candidate's class: its methods and attributes only.

    No comparison, hashing or conversion of its own: it equals only itself."""

    def __init__(self, link: Link, handle: int, cls: str) -> None:
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_cls", cls)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        link: Link = object.__getattribute__(self, "_link")
        target = (object.__getattribute__(self, "_handle"), name)
        answer = link.request("attr", target, (), {})
        if answer[0] == "method" and len(answer) == 1:
            return lambda *args, **kwargs: _method(link, target, args, kwargs)
        if answer[0] == "ok" and len(answer) == 2:
            return answer[1]
        raise link.fail("the candidate's answer is malformed")

    def __repr__(self) -> str:
        return f"<candidate's {object.__getattribute__(self, '_cls')} object>"


def _method(link: Link, target: tuple[int, str], args: Any, kwargs: Any) -> Any:
    answer = link.request("method", target, args, kwargs)
    if answer[0] == "ok" and len(answer) == 2:
        return answer[1]
    raise link.fail("the candidate's answer is malformed")


def _hex(text: str) -> str:
    return text.encode("utf-8", "replace").hex() or "-"


def _describe(link: Link) -> str:
    """Why the test failed. Never raises: the exception may hold the candidate's value, whose
    ``str()`` can itself fail (an int over Python's digit limit)."""
    if link.failure is not None:
        return link.failure[:500]
    error = sys.exc_info()[1]
    name = type(error).__name__
    try:
        return f"{name}: {error}"[:500]
    except BaseException as exc:
        return f"{name} (its message cannot be printed: {type(exc).__name__})"


def _module(scope: dict[str, Any]) -> dict[str, Any]:
    """A new module ``solution`` holding a copy of `scope`, registered in this process's
    `sys.modules` (as ``python solution.py`` would: dataclasses and pickle look classes up
    there); its namespace, where dataset code runs."""
    module = types.ModuleType("solution")
    module.__dict__.update(scope)
    sys.modules["solution"] = module
    return module.__dict__


def _prompt_scope(prompt: str) -> dict[str, Any]:
    """The prompt's definitions, when it is Python (else nothing): dataset code, whose
    errors are the dataset's (raised)."""
    scope = _module({"__builtins__": builtins})
    for source in (prompt, prompt + "\n    pass\n"):
        try:
            code = compile(source, "prompt.py", "exec", dont_inherit=True, optimize=0)
        except (SyntaxError, ValueError):
            continue
        exec(code, scope)
        break
    return scope


_RUNNERS = frozenset({"compile", "eval", "exec"})
"""The builtins whose constant string argument is code the tests run (`_uses`)."""

_INDIRECT = _RUNNERS | {"breakpoint", "getattr", "globals", "hasattr", "locals", "vars"}
"""Builtins that run code from a string or look names up by a string or in a scope: never
the task's function (a test that calls ``eval('square(2)')`` means ``square``)."""

_MODES = frozenset({"eval", "exec", "single"})
_OWN_SCOPE = frozenset({"globals", "locals"})


class _Unread(Exception):
    """Code the tests run that `_uses` cannot read: a runner's argument that is not a
    constant, does not parse, or runs in a namespace of its own; a runner taken as a value."""


def _uses(source: str) -> tuple[set[str], set[str], set[str], bool]:
    """(names `source` reads from the module's globals, names it binds there, functions it
    calls by name, whether it runs code that cannot be read), counting the constant code it
    passes to `eval`, `exec` or `compile` as its own, read as those builtins read it."""
    read: set[str] = set()
    bound: set[str] = set()
    called: set[str] = set()
    unread = False
    pending: list[tuple[str | bytes, str]] = [(source, "exec")]
    while pending:
        code, mode = pending.pop()
        try:
            top = symtable.symtable(code, "test.py", mode)  # type: ignore[arg-type]
            tree = ast.parse(code, mode=mode)
        except (SyntaxError, ValueError):
            unread = True  # the tests themselves compile (`referee`): a nested string
            continue
        bound |= {symbol.get_name() for symbol in top.get_symbols() if symbol.is_local()}
        tables = [top]
        while tables:
            table = tables.pop()
            tables.extend(table.get_children())
            read |= {
                s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()
            }
        callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            try:
                _runner_taken(node, callees)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    called.add(node.func.id)
                    pending.extend(_code_argument(node.func.id, node))
            except _Unread:
                unread = True
    return read, bound, called, unread


def _runner_taken(node: ast.AST, callees: set[int]) -> None:
    """Raise `_Unread` where `node` takes a runner as a value (``f = eval``, ``map(exec,
    ...)``, ``builtins.eval``, ``from builtins import eval``): what it runs is not read."""
    if isinstance(node, ast.Name) and node.id in _RUNNERS and id(node) not in callees:
        raise _Unread(node.id)
    if (
        isinstance(node, ast.Attribute)
        and node.attr in _RUNNERS
        and isinstance(node.value, ast.Name)
        and node.value.id == "builtins"
    ):
        raise _Unread(node.attr)
    names = {alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()
    if isinstance(node, ast.ImportFrom) and node.module == "builtins" and names & {*_RUNNERS, "*"}:
        raise _Unread("builtins")


def _code_argument(name: str, call: ast.Call) -> list[tuple[str | bytes, str]]:
    """The code `call` (of `name`) hands `eval`, `exec` or `compile`, with its mode, as the
    builtin reads it: bytes as source (a coding cookie, else UTF-8), leading spaces and tabs
    stripped for `eval`. Raises `_Unread` when it cannot be read (see `_Unread`)."""
    if name not in _RUNNERS:
        return []
    first = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "source")][:1]
    if not first:
        return []  # a TypeError when run: it runs nothing
    if isinstance(first[0], ast.Call) and _is_name(first[0].func, "compile"):
        return []  # ``exec(compile(...))``: the `compile` call is read itself
    if not isinstance(first[0], ast.Constant) or type(first[0].value) not in (str, bytes):
        raise _Unread(name)
    code: str | bytes = first[0].value
    if name == "compile":
        return [(code, _compile_mode(call))]
    scopes = [*call.args[1:], *(k.value for k in call.keywords if k.arg in _OWN_SCOPE)]
    if any(not _is_own_scope(a) for a in scopes):
        raise _Unread(name)  # ``eval('abs(-3)', {})``: names resolve in a dict of its own
    if name == "eval":
        return [(code.lstrip(b" \t" if isinstance(code, bytes) else " \t"), "eval")]
    return [(code, "exec")]


def _compile_mode(call: ast.Call) -> str:
    """`compile`'s constant mode argument; raises `_Unread` when it has none."""
    mode = [*call.args[2:3], *(k.value for k in call.keywords if k.arg == "mode")][:1]
    if mode and isinstance(mode[0], ast.Constant) and mode[0].value in _MODES:
        return str(mode[0].value)
    raise _Unread("compile")


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_own_scope(node: ast.AST) -> bool:
    """``globals()`` or ``locals()``: the test's own namespace, where its names are bound."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _OWN_SCOPE
        and not node.args
        and not node.keywords
    )


def _task_builtins(tests: list[str], setup: str) -> frozenset[str]:
    """The builtins' names the assertions can only mean as the task's functions: every
    function they call by name and every name they or the setup read that neither defines
    is a builtin's (``assert pow(2, 10, 1000) == 24``). Empty when they use any other name:
    that one is the candidate's, and the builtins are helpers (``len(f(x))``, ``len(DATA)``,
    ``len(x)`` after a setup ``x = f(3)``); dunder names count as other names. The code in
    a constant string given to `eval`/`exec`/`compile` counts as theirs (`_uses`), and the
    builtins of `_INDIRECT` are never the task's. Raises `_Unsupported` when they use only
    builtins but run code `_uses` cannot read: which builtin it calls is unknown. Decided
    from the tests alone."""
    known = {name for name in dir(builtins) if not name.startswith("__")}
    read, defined, _, unread = _uses(setup)
    if not read - defined <= known:
        return frozenset()
    called: set[str] = set()
    for test in tests:
        read, bound, calls, opaque = _uses(test)
        if not read - bound - defined <= known:
            return frozenset()
        called |= calls
        unread |= opaque
    if unread:
        why = "the tests call only builtins and run code that cannot be read (`eval`, `exec`"
        why += " or `compile` of a value): they cannot tell the program from the builtins"
        raise _Unsupported(why)
    called -= _INDIRECT
    return frozenset(called) if called <= known else frozenset()


def _bind(link: Link, table: Any, task: frozenset[str]) -> dict[str, Any]:
    """Stand-ins for the candidate's names (asserts style); the names in `task`
    (`_task_builtins`) are the candidate's even when it defines none of them."""
    scope = _module({"__builtins__": builtins})
    if type(table) is not dict:
        return scope
    scope.update({name: Remote(link, name) for name in task})
    shadowing = set(dir(builtins)) - task
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    for name, entry in table.items():
        if type(name) is not str or not name.isidentifier() or name in shadowing:
            continue
        if name.startswith("__"):  # __builtins__, __name__...: the scope's own
            continue
        if type(entry) is not tuple or not entry:
            continue
        kind = entry[0]
        if kind in ("function", "class") and len(entry) == 1:
            scope[name] = Remote(link, name, is_class=kind == "class")
        elif kind == "value" and len(entry) == 2:
            scope[name] = entry[1]
        elif kind == "module" and len(entry) == 2 and type(entry[1]) is str:
            # Only a standard module this process already loaded: importing one the
            # candidate names could run its import-time code here (idlelib, antigravity).
            module = sys.modules.get(entry[1])
            if module is not None and entry[1].split(".")[0] in stdlib:
                scope[name] = module
    return scope


def referee(config: dict[str, Any], link: Link, emit: Callable[[str], None]) -> None:
    """Run the tests of `config` against the candidate at the other end of `link`."""
    style, tests = config["style"], config["tests"]
    try:
        compiled = [
            compile(test, f"test_{i}.py", "exec", dont_inherit=True, optimize=0)
            for i, test in enumerate(tests)
        ]
        setup = compile(config["setup"], "setup.py", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as exc:
        emit("invalid " + _hex(f"the tests do not compile: {type(exc).__name__}: {exc}"))
        return
    try:
        task = _task_builtins(tests, config["setup"]) if style == "asserts" else frozenset()
    except _Unsupported as exc:
        emit("invalid " + _hex(str(exc)))
        return
    if len(task) > 1:
        names = ", ".join(sorted(task))
        why = f"the tests call only builtins ({names}): they cannot tell the program from them"
        emit("invalid " + _hex(why))
        return
    try:
        loaded: Any = link.receive()  # the program ran: its names, or why it broke
    except CandidateFailed as exc:
        loaded = ("broken", f"ended its process before any test ({exc})")
    if type(loaded) is tuple and len(loaded) == 2 and loaded[0] == "broken":
        broken = f"the program {loaded[1]}" if type(loaded[1]) is str else "broken"
    elif type(loaded) is tuple and len(loaded) == 2 and loaded[0] == "loaded":
        broken = None
    else:
        broken = "the candidate's first message is malformed"
    if style == "humaneval":
        try:
            scope = _prompt_scope(config["prompt"])
        except BaseException:
            emit("invalid " + _hex(f"the problem's prompt failed: {_describe(link)}"))
            return
        scope[config["entry_point"]] = Remote(link, config["entry_point"])
        table = loaded[1] if broken is None and type(loaded[1]) is dict else {}
        if broken is None and table.get(config["entry_point"]) != ("function",):
            broken = f"the program defines no function {config['entry_point']!r}"
    else:
        link.dataset_arguments = False
        scope = _bind(link, loaded[1] if broken is None else None, task)
    if broken is None:
        try:
            exec(setup, scope)
        except _Unsupported as exc:
            emit("invalid " + _hex(str(exc)))
            return
        except BaseException:
            broken = f"the setup failed: {_describe(link)}"
    for i, test in enumerate(compiled):
        if broken is not None:
            emit(f"test {i} 0 {_hex(broken)}")
            continue
        link.failure = None
        try:
            local = _module(scope)
            exec(test, local)
            if style == "humaneval":
                check = local.get("check")
                if not callable(check):
                    emit("invalid " + _hex("the HumanEval test defines no check(candidate)"))
                    return
                check(local[config["entry_point"]])
        except _Unsupported as exc:
            emit("invalid " + _hex(str(exc)))
            return
        except BaseException:
            emit(f"test {i} 0 {_hex(_describe(link))}")
            continue
        if link.failure is not None:
            emit(f"test {i} 0 {_hex(link.failure[:500])}")
        else:
            emit(f"test {i} 1 -")
    emit(f"done {len(compiled)}")
