# Which tests may run at the same time under `ctest -j2` (scripts/test.sh, scripts/test-asan.sh).
# CTest includes this file after the test lists gtest_discover_tests wrote (TEST_INCLUDE_FILES,
# tests/CMakeLists.txt), so the discovered names are in <target>_TESTS here; properties set here
# may be lists (gtest_discover_tests' PROPERTIES argument splits them).
#
# The integration tests mostly wait on the kernel, so two at a time halve the wall time, but
# most of them share host-wide state — the `sandcell` cgroup parent, /run/sandcell, the nft table
# `sandcell` and its veths, the CPU that timing-sensitive waits share — and some assert on it as a
# whole. So:
# - lock `host`: every integration and skills test, one at a time, as before;
# - lock `dockerapi`: the Docker API tests, one at a time, beside a `host` test. Each runs its
#   own `serve --docker-api` on a private store and socket and checks only what it made, and no
#   other test looks at a Docker API store; what they share with the rest is the cgroup parent
#   (run-id named cgroups, which every other test filters by its own supervisor's pid), /run/sandcell
#   and, for containers on the default bridge network, the nft table and `sc-` veths;
# - lock `network` as well: the tests that look at the nft table, veths or network namespaces,
#   and the Docker API tests (bridge containers make those), so they never overlap;
# - RUN_SERIAL: the tests that assert "no cgroup, no run state at all" (BadInput, LateSeccomp).
# The unit tests hold no lock: they run beside anything.
foreach(name IN LISTS sandcell_integration_tests_TESTS sandcell_skills_tests_TESTS)
  if(name MATCHES "^integration\\.DockerApi")
    set_tests_properties("${name}" PROPERTIES RESOURCE_LOCK "dockerapi;network")
  elseif(name MATCHES "^integration\\.(BadInput|LateSeccomp)\\.")
    set_tests_properties("${name}" PROPERTIES RUN_SERIAL TRUE)
  elseif(name MATCHES "^integration\\.(Network|NetnsPool|Transport/|Rootless|HostileNetwork|LeanBinary)"
         OR name MATCHES "^skills\\.(Packages|Hostile/PythonSocket)")
    set_tests_properties("${name}" PROPERTIES RESOURCE_LOCK "host;network")
  else()
    set_tests_properties("${name}" PROPERTIES RESOURCE_LOCK "host")
  endif()
endforeach()
