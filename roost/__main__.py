"""`python -m roost` and the frozen binary's entry."""

import sys


def run():
    argv = sys.argv[1:]
    if getattr(sys, "frozen", False):
        from roost.bundle.files import hold_own_copy

        hold_own_copy()   # in use: a newer release's daemon must not remove it
    # Hidden entries first: they must not pay for the CLI's imports.
    if argv[:1] == ["daemon"] and "--foreground" in argv:
        from roost.daemon.main import main as daemon_main

        return daemon_main(argv[1:])
    if argv[:1] == ["keeper"]:
        from roost.keeper.main import main as keeper_main

        return keeper_main(argv[1:])
    from roost.cli.main import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(run())
