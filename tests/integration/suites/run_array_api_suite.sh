#!/bin/bash
# Run the Array API conformance suite (github.com/data-apis/array-api-tests, with its array-api
# submodule checked out) against funcgrad.numpy (or another namespace for comparison).
# usage: tests/integration/suites/run_array_api_suite.sh /path/to/array-api-tests [module] [extra pytest args]
#   module defaults to funcgrad.numpy; pass jax.numpy to compare (JAX_ENABLE_X64=1 is set for it).
set -e
here=$(cd "$(dirname "$0")/../../.." && pwd)
suite=${1:?path to a checkout of array-api-tests}; shift
module=${1:-funcgrad.numpy}; shift || true
cd "$suite"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" ARRAY_API_TESTS_MODULE=$module JAX_ENABLE_X64=1 \
  python -m pytest array_api_tests/ -p no:cacheprovider -q --max-examples=5 --derandomize --disable-deadline "$@"
