"""`python -m roost` and the frozen binary's entry."""

import sys


def run():
    argv = sys.argv[1:]
    # Hidden entries first: they must not pay for the CLI's imports.
    if argv[:1] == ["daemon"] and "--foreground" in argv:
        from roost.daemon import main as daemon_main

        return daemon_main(argv[1:])
    if argv[:1] == ["keeper"]:
        from roost.keeper import main as keeper_main

        return keeper_main(argv[1:])
    from roost.cli import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(run())
