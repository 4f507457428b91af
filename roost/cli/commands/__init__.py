"""One module per subcommand; each module's docstring is its docopt usage and its
`main(opts, ctx)` runs it (roost.cli.main lists them, roost.cli.context runs them)."""
