# The warm pool's bootstrap for bash (docs/architecture.md, "The warm pool"), run as
# `bash -c <this text>` in a prepared sandbox: says "ready" with one NUL byte on stdout, waits
# for the go byte on stdin (`read` takes a pipe a byte at a time: the rest is the program's
# stdin), then becomes `bash /workspace/main.sh`, as the cold run starts it (exec gives SHLVL
# back and main.sh's bash sets its own `_`: PoolE2E.PooledBashGivesTheColdResult compares).
printf '\0'
IFS= read -r -d '' -n 1 _go || exit 0  # EOF: the member cancelled, nothing runs
unset _go
exec bash /workspace/main.sh
