"""What the fleet spent: tokens and their list-price estimate, read from each agent's own
records, grouped as asked. `usd` is `—` where a model has no price (named after it),
and a job roost cannot read is not guessed at. A task's spend is every job it ever had.
With several --host (before the command), the machines' totals add up.

Usage:
  roost usage [--by=WHAT] [--since=WHEN] [--json]
  roost usage --prices [--json]
  roost usage --windows [--json]
  roost usage --help

Options:
  --by=WHAT     job, task, project, provider, model, day or host [default: job]
  --since=WHEN  from this local day on: YYYY-MM-DD, today, yesterday or Nd (N days back)
  --prices      the price table in force (USD per million tokens), its date and source
  --windows     each provider's plan windows as its agents last wrote them: percent
                used, when each resets, how old the reading is
  --json        print the op's result as JSON
"""

import time

from roost import clock
from roost.cli.context import ExitStatus
from roost.client.connection import Lost, Unreachable, connect
from roost.rows import usd_text


def main(opts, ctx):
    if opts["--windows"]:
        result = ctx.call("windows", {})
        ctx.show(opts, result, windows_text(result["windows"], clock.now_ms()))
        return ExitStatus.OK
    if opts["--prices"]:
        result = ctx.call("prices", {})
        ctx.show(opts, result, prices_text(result))
        return ExitStatus.OK
    args = {"by": opts["--by"]}
    if opts["--since"]:
        args["since"] = opts["--since"]
    hosts = ctx.hosts if len(ctx.hosts) > 1 else None
    if hosts is None:
        result = ctx.call("usage", args)
    else:
        from roost.spend import usage

        parts = []
        for host in hosts:
            part = _host_call(ctx, host, args)
            if opts["--by"] == "host":
                for group in part["groups"]:
                    group["key"] = host       # the machine as the person named it
            parts.append(part)
        result = usage.merge(parts, opts["--by"])
    ctx.show(opts, result, table(result, opts["--by"]))
    return ExitStatus.OK


def _host_call(ctx, host, args):
    client = connect(ctx.env, ctx.socket) if host == "local" else ctx.host_client(host)
    try:
        return client.call("usage", args)
    except Lost as error:
        raise Unreachable(f"{host}: the daemon closed the connection: {error}")
    finally:
        client.close()


def amount(value):
    """A token count as a person reads it: 950, 12.3k, 4.56M."""
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if value >= size:
            shown = f"{value / size:.3g}"
            return f"{shown}{unit}"
    return str(value)


def dollars(usd):
    return "—" if usd is None else "$0.00" if usd == 0 else usd_text(usd)


def table(result, by):
    groups = result["groups"]
    if not groups:
        return "nothing spent that roost could read"
    lines = [f"{by.upper():<24}  {'INPUT':>8}  {'OUTPUT':>8}  {'CACHE R':>8}  {'CACHE W':>8}  {'USD':>10}  JOBS"]
    for group in groups + [dict(result["total"], key="total", jobs=None)]:
        tokens = group["tokens"]
        key = "(no task)" if group["key"] is None and by == "task" else str(group["key"])
        jobs = "" if group.get("jobs") is None else str(len(group["jobs"]))
        line = (f"{key[:24]:<24}  {amount(tokens['input']):>8}  {amount(tokens['output']):>8}  "
                f"{amount(tokens['cacheRead']):>8}  {amount(tokens['cacheWrite']):>8}  {dollars(group['usd']):>10}  {jobs}")
        if group.get("unpriced"):
            line += f"  (no price: {', '.join(group['unpriced'])})"
        lines.append(line.rstrip())
    return "\n".join(lines)


def prices_text(result):
    lines = [f"prices of {result.get('date') or '?'} ({result.get('unit')}), from {result.get('source') or '?'}"]
    if result.get("fromConfig"):
        lines.append(f"roost.json adds or overrides: {', '.join(result['fromConfig'])}")
    lines.append(f"{'MODEL':<36}  {'INPUT':>8}  {'OUTPUT':>8}  {'CACHE R':>8}  {'CACHE W':>8}")
    for name, price in result["models"].items():
        cells = "  ".join(f"{price[field] if price[field] is not None else '—':>8}"
                          for field in ("input", "output", "cacheRead", "cacheWrite"))
        lines.append(f"{name[:36]:<36}  {cells}")
    return "\n".join(lines)


def ago(ms):
    seconds = max(0, int(ms / 1000))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def windows_text(windows, now):
    if not windows:
        return "no agent has written its plan's windows yet"
    lines = [f"{'PROVIDER':<12}  {'WINDOW':<6}  {'USED':>5}  {'RESETS':<16}  READ"]
    for entry in windows:
        resets = entry.get("resetsAt")
        when = time.strftime("%a %H:%M", time.localtime(resets / 1000)) if resets else "?"
        if entry.get("stale"):
            when += " (past)"
        lines.append(f"{entry['provider'][:12]:<12}  {entry['window']:<6}  {entry['usedPercent']:>4.0f}%  {when:<16}  "
                     f"{ago(now - entry['at'])} ago from {entry.get('source') or '?'}"
                     + ("  (a rejection)" if entry.get("rejected") else ""))
    return "\n".join(lines)
