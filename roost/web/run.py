"""Running `roost web` once patched (roost.cli.commands.web calls it after the one patch
site): its log, the server, the pairing URL as the first line of output, then serving
until SIGINT or SIGTERM."""

import logging
import signal
import sys

import gevent
import gevent.event

from roost import blocking, paths
from roost.unix.files import write_atomic
from roost.web.server import WebServer, print_url

log = logging.getLogger(__name__)


def _log_to(path):
    handler = logging.FileHandler(path) if path else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def run(ctx, links, listen, opts, tls, proxy, url_file):
    """Serves until a signal; None, or why it could not start."""
    _log_to(opts.get("--log"))
    blocking.use_threadpool()     # the device book's durable writes run off the loop
    home = paths.home(ctx.env)
    server = WebServer(home, links, listen[0], listen[1], read_only=bool(opts.get("--read-only")), tls=tls,
                       public_url=proxy, behind_proxy=proxy is not None)
    try:
        url = server.start()
    except OSError as error:
        return f"cannot listen on {listen[0]}:{listen[1]}: {error.strerror or error}"
    write_atomic(url_file, (url + "\n").encode("utf-8"), 0o600)
    print_url(url, server.book.new_pairing(), ctx.stdout)
    log.info("serving %s%s", url, " (read-only)" if server.read_only else "")
    stopping = gevent.event.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(number, stopping.set)
    stopping.wait()
    server.stop()
    return None
