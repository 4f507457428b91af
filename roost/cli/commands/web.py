"""The fleet from a browser or a phone: one page, the inbox of what needs you first,
answered in place (docs/web.md). Its first line of output is the URL to open, with a
one-time pairing token (good for 10 minutes); a QR code of it follows on a terminal.
Opening it pairs the browser: a device, listed by `roost web devices`, ended by `roost
web revoke NAME` (its open pages are cut off at once).

A listen address other than loopback is refused unless the page travels in TLS: give it
a certificate and key (`--tls CERT KEY`), or say a TLS proxy such as `tailscale serve`
is in front (`--behind-proxy URL`, URL being the address people open).

Usage:
  roost web [--listen=ADDR] [--read-only] [--tls <cert> <key> | --behind-proxy=URL] [--host=HOST...] [--log=FILE]
  roost web pair [--url=URL]
  roost web devices [--json]
  roost web revoke <name>
  roost web --help

Options:
  --listen=ADDR       HOST:PORT to listen on [default: 127.0.0.1:7717]; port 0 picks a free one
  --read-only         serve the same page with every action refused
  --tls               serve HTTPS with this certificate and key (PEM files)
  --behind-proxy=URL  a TLS proxy in front answers at URL (https://box.tailnet.ts.net)
  --host=HOST         a machine whose jobs to show (several may be given; `local` is this one)
  --log=FILE          log here (default: stderr)
  --url=URL           the page's address for the pairing link (default: the last `roost web` started)
  --json              print the devices as JSON
"""

import json
import os
import time

from roost import paths
from roost.cli.context import ExitStatus


def _split_listen(value):
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or not host:
        return None
    return host.strip("[]"), int(port)


def _book(ctx):
    from roost.web.devices import DeviceBook

    return DeviceBook(paths.home(ctx.env))


def _url_file(ctx):
    return os.path.join(paths.home(ctx.env), "web", "url")


def main(opts, ctx):
    if opts["devices"]:
        return _devices(opts, ctx)
    if opts["revoke"]:
        name = _book(ctx).revoke(opts["<name>"])
        if name is None:
            ctx.stderr.write(f"roost web revoke: no device is named {opts['<name>']!r} (`roost web devices`)\n")
            return ExitStatus.REFUSED
        ctx.stdout.write(f"revoked {name}: its pages are cut off\n")
        return ExitStatus.OK
    if opts["pair"]:
        return _pair(opts, ctx)
    return _serve(opts, ctx)


def _devices(opts, ctx):
    listed = _book(ctx).listed()
    if opts["--json"]:
        ctx.stdout.write(json.dumps(listed) + "\n")
        return ExitStatus.OK
    if not listed["devices"]:
        ctx.stdout.write("no paired devices (`roost web` prints a pairing URL)\n")
    for device in listed["devices"]:
        seen = time.strftime("%Y-%m-%d %H:%M", time.localtime((device["lastSeen"] or 0) / 1000))
        paired = time.strftime("%Y-%m-%d %H:%M", time.localtime((device["pairedAt"] or 0) / 1000))
        ctx.stdout.write(f"{device['name']:<24} paired {paired}  last seen {seen} from {device['address']}"
                         f"{'  push' if device.get('push') else ''}\n")
    return ExitStatus.OK


def _pair(opts, ctx):
    url = opts["--url"]
    if url is None:
        try:
            with open(_url_file(ctx), encoding="utf-8") as handle:
                url = handle.read().strip()
        except OSError:
            ctx.stderr.write("roost web pair: no `roost web` has run here yet (or give --url)\n")
            return ExitStatus.USAGE
    from roost.web.devices import PAIRING_S

    token = _book(ctx).new_pairing()
    ctx.stdout.write(f"{url.rstrip('/')}/?pair={token}\n")
    ctx.stderr.write(f"(good once, for {PAIRING_S // 60} minutes)\n")
    return ExitStatus.OK


def _serve(opts, ctx):
    listen = _split_listen(opts["--listen"])
    if listen is None:
        ctx.stderr.write(f"roost web: --listen takes HOST:PORT, not {opts['--listen']!r}\n")
        return ExitStatus.USAGE
    tls = (opts["<cert>"], opts["<key>"]) if opts["--tls"] else None
    proxy = opts["--behind-proxy"]
    if proxy is not None and not proxy.startswith(("https://", "http://")):
        ctx.stderr.write("roost web: --behind-proxy takes the URL people open (https://...)\n")
        return ExitStatus.USAGE
    from roost.web.guard import check_listen

    refused = check_listen(listen[0], tls, proxy)
    if refused:
        ctx.stderr.write(f"roost web: {refused}\n")
        return ExitStatus.USAGE
    try:
        links = _links(ctx, opts.get("--host") or ())
    except ValueError as error:
        ctx.stderr.write(f"roost web: {error}\n")
        return ExitStatus.USAGE
    from roost.daemon.patching import patch

    patch()              # the one patch site: before gevent's server and sockets load
    from roost.web.run import run

    why = run(ctx, links, listen, opts, tls, proxy, _url_file(ctx))
    if why:
        ctx.stderr.write(f"roost web: {why}\n")
        return ExitStatus.USAGE
    return ExitStatus.OK


def _links(ctx, named):
    """One Link per machine, as the hub's (roost.hub.links), each with an opener: the
    web opens a connection per screen and per machine's requests."""
    from roost.client import hosts
    from roost.client.connection import connect
    from roost.hub.links import Link

    names = [hosts.check_host(name) if name != hosts.LOCAL else name for name in list(ctx.hosts) + list(named)]
    names = list(dict.fromkeys(names)) or hosts.hosts_of(hosts.settings(ctx.env))

    def local():
        client = connect(ctx.env, ctx.socket)
        client.guard = ctx.refuse_the_persons_op
        return client

    def remote(host):
        return ctx.host_client(host, stderr=open(os.devnull, "wb"), own_session=True)

    if not names:
        return [Link(hosts.LOCAL, local, tagged=False)]
    return [Link(name, local if name == hosts.LOCAL else (lambda name=name: remote(name)), tagged=True)
            for name in names]
