"""ilplayer's applications, built on the library and never imported by it: the command line
(`cli`, `commands`, `fuzz_command`, `learn_command`), the benchmarks' kit (`bench`) and the
papers' experiments (`experiments`). A user's own code imports the library: `ilplayer`,
`ilplayer.gradients`, `ilplayer.losses`, the readers, the executors, `ilplayer.metrics`."""
