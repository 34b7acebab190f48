"""The `encyclopedia` command: its subcommands, where it reads entries from, how it prints a
diagnosis and how it wraps a training command."""
