"""Exit 0 when 127.0.0.1:PORT can be listened on; else print one line saying how to choose
another port and exit 1 (`make serve` runs this first instead of ending in a traceback)."""

from __future__ import annotations

import socket
import sys


def main() -> None:
    port = int(sys.argv[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as err:
            print(f"port {port} is not free ({err.strerror}): run `make serve PORT=<another>`")
            sys.exit(1)


if __name__ == "__main__":
    main()
