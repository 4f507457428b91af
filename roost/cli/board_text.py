"""The task board as `roost task` prints it: the table, one task, a workspace's note, the
review diff. Plain text for a person; `--json` prints the op's result instead."""

from roost import rows

TITLE_WIDTH = 60


def table(tasks):
    if not tasks:
        return "the board is empty"
    lines = [f"  {'ID':>4}  {'STAGE':<9}  {'HOLDER':<20}  TITLE"]
    for task in tasks:
        holder = (task.get("owner") or {}).get("name") or ""
        workspace = task.get("workspace") or {}
        shown = workspace.get("stage") or task["state"]
        if task.get("prepared") and not workspace.get("stage"):
            shown = "prepared"
        after = f"  (after {', '.join('#' + str(other) for other in task['after'])})" if task.get("after") else ""
        spent = f"  ({spend_text(task['spend'])})" if task.get("spend") else ""
        lines.append(f"  {'#' + str(task['id']):>4}  {shown:<9}  {holder[:20]:<20}  {task['title']}{after}{spent}")
        if workspace.get("note") and workspace.get("stage") not in ("merged",):
            lines.append(f"  {'':>4}  {'':<9}  {'':<20}  - {workspace['note']}")
        for entry in workspace.get("overlaps") or []:
            lines.append(f"  {'':>4}  {'':<9}  {'':<20}  ! {overlap(entry)}")
        if task.get("paths") and task["state"] not in ("done", "dropped"):
            lines.append(f"  {'':>4}  {'':<9}  {'':<20}  paths: {', '.join(task['paths']['globs'])}")
    return "\n".join(lines)


def spend_text(spend):
    """What a task's jobs spent (issue 29): list-price USD, or the tokens when a model has no price."""
    return f"spent {rows.spend_text(spend)} in {len(spend.get('jobs') or ())} job{'' if len(spend.get('jobs') or ()) == 1 else 's'}"


def overlap(entry):
    """`overlaps #4 in a.txt, b.txt: git predicts a conflict in a.txt` (issue 20)."""
    files = ", ".join(entry["files"][:5]) + (" ..." if len(entry["files"]) > 5 or entry.get("more") else "")
    text = f"overlaps #{entry['task']} in {files}"
    if entry.get("conflicts"):
        return text + f": git predicts a conflict in {', '.join(entry['conflicts'][:5])}"
    if entry.get("conflicts") == []:
        return text + ": git predicts a clean merge"
    return text + (f" ({entry['note']})" if entry.get("note") else "")


def one(result):
    """`#4 title: review (its note)`, then the result's note, the hand-over, the job."""
    task = result.get("task") or {}
    workspace = task.get("workspace") or {}
    where = workspace.get("stage") or task.get("state")
    lines = [f"#{task.get('id')} {task.get('title')}: {where}"]
    if workspace.get("note"):
        lines[0] += f" ({workspace['note']})"
    if result.get("job"):
        lines.append(f"started {result['job']['id']} {result['job']['name']}")
    if result.get("workspace"):
        prepared = result["workspace"]
        lines.append(f"worktree {prepared['path']} on {prepared['branch']} from {prepared['baseRef']} "
                     f"({prepared['baseSha'][:12]})")
        if prepared.get("sourceDirty"):
            lines.append(f"note: the main checkout has uncommitted changes, which the worktree does not have")
    if result.get("sent"):
        lines.append(f"the message: {result['sent']}")
    if result.get("note") and result["note"] != workspace.get("note"):
        lines.append(result["note"])
    return "\n".join(lines)


def diff(result):
    found = result["diff"]
    head = f"# {found['branch']} against {found['baseRef']} ({found['base'][:12]}...{found['tip'][:12]})"
    text = found["text"] or "(no changes)\n"
    if found.get("truncated"):
        text += "\n# ... cut: the diff is too long to show whole\n"
    return head + "\n" + text.rstrip("\n")
