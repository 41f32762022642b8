"""The per-node model host: one process loads a model once and batches every worker's inputs.

The engine scores samples in a pool of CPU worker processes, one per core. A reward model
loaded in each of them would cost one copy of its weights per worker and one cold start per
replaced worker, and each copy could batch only the samples its worker holds. So a model reward
does not load its model: it asks a *host*, one process per model per node that loaded it
once, over a Unix socket.

* **Start**: lazily, by the first process that builds a reward needing that model (in the
  engine, that is the spec check in the engine's own process, before any worker starts), so a
  model that fails to load fails the spec, and no task ever pays for a load inside its
  timeout. The host is a Python process running `main` here, in its own session; its
  log is ``<socket dir>/<key>.log``. The socket lives in ``$TMPDIR/rewardsmith-<uid>/``
  (mode 0700: only this user can connect); a lock file makes concurrent starters start one.
* **Identity**: one host per model configuration (and the model files' sizes and times) per
  user per node: every worker, engine and trainer rank on the node that asks for the same
  model shares it.
* **Batching**: a worker sends all the inputs of its batch at once (the engine's `prefetch`
  hook), then reads each result as it scores that sample. The host cuts its queue into
  micro-batches of at most `batch_size` inputs, taking from its clients in turn, so one
  forward pass serves several workers and no worker waits behind another's whole batch.
  Results stream back per micro-batch. Identical inputs are computed once per worker (an LRU
  of results: model outputs are deterministic).
* **Lifetime**: the host exits when the process that started it (the engine's process, when
  started from a worker) has exited and no client is connected: it dies with its parent, and
  a node's ranks keep it while any of them is connected.
* **Timeouts**: the calling task keeps its hard timeout: a worker waiting on the host past it
  is killed like any other, and the host drops that worker's queued inputs when its
  connection closes. Outside the engine, every wait is bounded by the reward's
  `request_timeout_s`.

Wire format: each message is an 8-byte length and a pickle. Client to host: ``(request_id,
items)``; host to client: ``(request_id, [(index, ok, value or error text), ...])``.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import hashlib
import multiprocessing
import os
import pickle
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from ._ahead import Ahead, ModelError

__all__ = ["HostClient", "HostedModel", "ModelError", "Runner", "host_client", "main", "stop_hosts"]

_HEADER = struct.Struct("!Q")
_MAX_MESSAGE = 1 << 31
"""Largest message accepted (2 GiB): a bound, not a target."""
_SEND_TIMEOUT_S = 30.0
"""A host that cannot take a request in this time is stuck."""
_WATCH_S = 0.5
"""How often the host checks whether it is still needed."""
_HOW = frozenset({"batch_size", "load_timeout_s"})
"""Settings of how a host is run, not of the model: the first starter's are used."""


class Runner(Protocol):
    """What a host runs: a loaded model that maps a batch of inputs to their outputs."""

    def run(self, items: list[Any]) -> list[Any]: ...


@dataclass(frozen=True)
class HostedModel:
    """A model a host can load: a local folder and how to run it (subclasses say what)."""

    path: str
    """A local model folder (nothing is downloaded)."""
    batch_size: int = 8
    """Most inputs per forward pass."""
    load_timeout_s: float = 300.0
    """Longest wait for the host to load the model."""

    def load(self) -> Runner:  # pragma: no cover - each model kind defines it
        raise NotImplementedError

    def key(self) -> str:
        """Names this model's host: its class, what it loads and runs (not how it batches)
        and the model files' stats. Rewards asking for the same model share its host."""
        settings = [(f.name, getattr(self, f.name)) for f in fields(self) if f.name not in _HOW]
        files = sorted(
            (p.name, p.stat().st_size, p.stat().st_mtime_ns)
            for p in Path(self.path).iterdir()
            if p.is_file()
        )
        blob = repr((type(self).__module__, type(self).__qualname__, settings, files))
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


# -- framing --------------------------------------------------------------------------------------


def _send(sock: socket.socket, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > _MAX_MESSAGE:
        raise EOFError(f"message of {size} bytes")
    return pickle.loads(_recv_exact(sock, size))


# -- where hosts live -----------------------------------------------------------------------------


def socket_dir() -> Path:
    """The private folder of this user's hosts (created 0700; refused if anyone else can
    enter it, since a socket there runs what it is sent)."""
    folder = Path(tempfile.gettempdir()) / f"rewardsmith-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
        raise ModelError(f"{folder} is not a folder owned by this user")
    if info.st_mode & 0o077:
        raise ModelError(f"{folder} is open to other users (mode {info.st_mode & 0o777:o})")
    return folder


def _owner_pid() -> int:
    """The process a host started from here should outlive no longer than: the engine's
    process when this is one of its workers, else this process."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getpid()


# -- the host process -----------------------------------------------------------------------------


class _Server:
    """Accepts clients, queues their inputs per client, runs micro-batches in turn."""

    def __init__(self, runner: Runner, batch_size: int, listener: socket.socket, path: str) -> None:
        self.runner = runner
        self.path = path
        self.batch_size = batch_size
        self.listener = listener
        self.queues: dict[socket.socket, collections.deque[tuple[int, int, Any]]] = {}
        self.send_locks: dict[socket.socket, threading.Lock] = {}
        self.ready = threading.Condition()

    def accept_forever(self) -> None:
        while True:
            client, _ = self.listener.accept()
            with self.ready:
                self.queues[client] = collections.deque()
                self.send_locks[client] = threading.Lock()
            threading.Thread(target=self.read, args=(client,), daemon=True).start()

    def read(self, client: socket.socket) -> None:
        try:
            while True:
                message = _recv(client)
                if message == "stop":
                    self.exit()
                request_id, items = message
                with self.ready:
                    self.queues[client].extend(
                        (request_id, index, item) for index, item in enumerate(items)
                    )
                    self.ready.notify()
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        with self.ready:  # the client is gone: so is its queued work
            self.queues.pop(client, None)
            self.send_locks.pop(client, None)
        client.close()

    def exit(self) -> None:
        """Stop now: the socket goes first, so no client connects to a dying host."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os._exit(0)

    def clients(self) -> int:
        with self.ready:
            return len(self.queues)

    def next_batch(self) -> list[tuple[socket.socket, int, int, Any]]:
        """Up to `batch_size` queued inputs, one client after another in turn."""
        with self.ready:
            while not any(self.queues.values()):
                self.ready.wait()
            batch: list[tuple[socket.socket, int, int, Any]] = []
            while len(batch) < self.batch_size and any(self.queues.values()):
                for client, queue in self.queues.items():
                    if queue and len(batch) < self.batch_size:
                        batch.append((client, *queue.popleft()))
            return batch

    def run_forever(self) -> None:
        while True:
            batch = self.next_batch()
            try:
                outputs = [(True, out) for out in self.runner.run([b[3] for b in batch])]
                if len(outputs) != len(batch):
                    raise ModelError(f"{len(outputs)} outputs for {len(batch)} inputs")
            except Exception as exc:  # the batch fails; the host and other batches go on
                outputs = [(False, f"{type(exc).__name__}: {exc}")] * len(batch)
            replies: dict[tuple[socket.socket, int], list[tuple[int, bool, Any]]] = {}
            for (client, request_id, index, _), (ok, value) in zip(batch, outputs, strict=True):
                replies.setdefault((client, request_id), []).append((index, ok, value))
            for (client, request_id), results in replies.items():
                with self.ready:
                    lock = self.send_locks.get(client)
                if lock is None:
                    continue
                with lock, contextlib.suppress(OSError):
                    _send(client, (request_id, results))


def _watch(server: _Server, owner: int) -> None:
    """Exit once the owner has exited and no client is connected."""
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(owner)
    while True:
        if pidfd is not None:
            owner_gone = bool(select.select([pidfd], [], [], _WATCH_S)[0])
        else:
            time.sleep(_WATCH_S)
            try:
                os.kill(owner, 0)
                owner_gone = False
            except ProcessLookupError:
                owner_gone = True
            except PermissionError:
                owner_gone = False
        if owner_gone and server.clients() == 0:
            server.exit()


def serve(model: HostedModel, path: str, owner: int) -> None:
    """Load `model`, listen on `path`, serve until no longer needed (the host's main)."""
    runner = model.load()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener.bind(path)
    listener.listen(256)
    server = _Server(runner, model.batch_size, listener, path)
    threading.Thread(target=server.accept_forever, daemon=True).start()
    threading.Thread(target=_watch, args=(server, owner), daemon=True).start()
    print(f"rewardsmith model host {os.getpid()}: serving {model.path} on {path}", flush=True)
    server.run_forever()


# -- the client -----------------------------------------------------------------------------------


class HostClient(Ahead):
    """One process's connection to a model's host: inputs sent ahead, outputs read back as the
    host's replies come (a reply may answer inputs of several `get` calls)."""

    def __init__(self, model: HostedModel) -> None:
        super().__init__()
        self.model = model
        self._sock: socket.socket | None = None
        self._next_id = 0
        self._requests: dict[int, list[Hashable]] = {}

    def connect(self) -> None:
        """Connect now, starting the host if none listens, so a load failure shows here."""
        with self._lock:
            if self._sock is None:
                self._sock = _connect_or_start(self.model)
                self._sock.settimeout(_SEND_TIMEOUT_S)

    def _send(self, items: list[Hashable]) -> None:
        self.connect()
        assert self._sock is not None
        self._next_id += 1
        try:
            _send(self._sock, (self._next_id, items))
        except OSError as exc:
            self._reset()
            raise ModelError(f"model host: {exc}") from exc
        self._requests[self._next_id] = items

    def _wait(self, item: Hashable, timeout_s: float) -> None:
        sock = self._sock
        if sock is None or not select.select([sock], [], [], timeout_s)[0]:
            return  # the caller checks its deadline
        try:  # a reply that has started arrives whole (the socket's timeout bounds it)
            request_id, results = _recv(sock)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            self._reset()
            raise ModelError(f"model host connection lost: {exc}") from exc
        items = self._requests.get(request_id, [])
        for index, ok, value in results:
            self._put(items[index], ok, value)
        if items and all(i not in self._waiting for i in items):
            del self._requests[request_id]

    def _reset(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        self._requests.clear()
        self._forget_waiting()

    def close(self) -> None:
        with self._lock:
            self._reset()


def _try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def _connect_or_start(model: HostedModel) -> socket.socket:
    """A connection to `model`'s host, starting the host (and waiting for its load) if none
    is listening. A lock file makes concurrent callers start one host."""
    folder = socket_dir()
    key = model.key()
    path = folder / f"{key}.sock"
    sock = _try_connect(path)
    if sock is not None:
        return sock
    deadline = time.monotonic() + model.load_timeout_s
    with open(folder / f"{key}.lock", "w") as lock:
        while True:  # bounded wait for another starter
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ModelError(f"timed out waiting for the host of {model.path}") from None
                time.sleep(0.05)
        try:
            sock = _try_connect(path)  # another process started it while we waited
            if sock is not None:
                return sock
            return _start(model, path, folder / f"{key}.log", deadline)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _start(model: HostedModel, path: Path, log: Path, deadline: float) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead host's socket
    with open(log, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-c", "from rewardsmith.reward_models._host import main; main()"],
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    assert process.stdin is not None
    process.stdin.write(pickle.dumps((model, str(path), _owner_pid())))
    process.stdin.close()
    _STARTED.append(process)
    while True:
        sock = _try_connect(path)
        if sock is not None:
            return sock
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2_000:].strip()
            raise ModelError(f"the model host for {model.path} failed to start: {tail}")
        if time.monotonic() > deadline:
            process.kill()
            raise ModelError(
                f"the model host for {model.path} did not load within {model.load_timeout_s:g} s"
            )
        time.sleep(0.05)


_STARTED: list[subprocess.Popen[bytes]] = []
"""Hosts this process started (reaped by `stop_hosts`)."""
_CLIENTS: dict[tuple[int, HostedModel], HostClient] = {}
_CLIENTS_LOCK = threading.Lock()


def host_client(model: HostedModel) -> HostClient:
    """This process's client of `model`'s host (one per process: rebuilt after a fork)."""
    key = (os.getpid(), model)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = HostClient(model)
        return client


def stop_hosts() -> None:
    """Stop the hosts this process's clients use, and close the clients (for tests and
    long-lived processes that are done with their models)."""
    with _CLIENTS_LOCK:
        clients = [c for (pid, _), c in _CLIENTS.items() if pid == os.getpid()]
        _CLIENTS.clear()
    for client in clients:
        sock = _try_connect(socket_dir() / f"{client.model.key()}.sock")
        if sock is not None:
            with contextlib.suppress(OSError):
                _send(sock, "stop")
            sock.close()
        client.close()
    for process in _STARTED:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    _STARTED.clear()


def main() -> None:
    """The host process: read its model, socket path and owner from stdin, then serve."""
    model, path, owner = pickle.load(sys.stdin.buffer)
    serve(model, path, owner)
