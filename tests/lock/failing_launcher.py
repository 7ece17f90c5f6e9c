"""A launcher whose unshare fails as it does where user namespaces are not allowed."""

import errno
import sys

from gate.lock import launcher


def refuse(flags: int) -> None:
    raise PermissionError(errno.EPERM, "unshare: Operation not permitted")


if __name__ == "__main__":
    sys.exit(launcher.main(int(sys.argv[1]), unshare=refuse))
