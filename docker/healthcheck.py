"""The container's health check: gate's /_gate/health on its loopback port answers 200."""

import os
import sys
import urllib.request

port = int(os.environ.get("GATE_PORT", "8787"))
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
try:
    with opener.open(f"http://127.0.0.1:{port}/_gate/health", timeout=4) as reply:
        sys.exit(0 if reply.status == 200 else 1)
except OSError as exc:
    print(f"gate is not answering on 127.0.0.1:{port}: {exc}", file=sys.stderr)
    sys.exit(1)
