"""The system calls the lock needs that Python's os module lacks: mount, prctl, capset."""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
# statvfs flags → the mount flags a remount must keep (the kernel locks them on mounts a
# less privileged namespace inherited, and refuses a remount that drops one).
_KEEP = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """unshare(2) (os.unshare is 3.12+; the launcher also runs on an older system Python)."""
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    _check(
        _libc.mount(
            _bytes(source), target.encode(), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data)
        ),
        f"mount {target}",
    )


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def remount_readonly(target: str) -> None:
    """Make the mount at `target` read-only, keeping the flags it already has."""
    have = os.statvfs(target).f_flag
    keep = sum(ms for st, ms in _KEEP if have & st)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)


def prctl(option: int, arg: int, arg3: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), 0, 0), f"prctl {option}")


def drop_privileges() -> None:
    """No capability left in any set, none to gain by exec (setuid files, file caps)."""
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
        last = int(f.read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    header = struct.pack("=Ii", _CAP_VERSION_3, 0)
    empty = ctypes.create_string_buffer(4 * 6)  # two zeroed {effective, permitted, inheritable}
    _check(_libc.capset(ctypes.c_char_p(header), empty), "capset")


def loopback_up() -> None:
    """Bring up `lo` in this network namespace (a new one has it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
