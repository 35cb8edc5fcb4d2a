#!/bin/bash
# Run HIPS autograd's own test suite against funcgrad through the import shim in tests/integration/suites/autograd_shim.
# usage: tests/integration/suites/run_autograd_suite.sh /path/to/autograd-checkout [extra pytest args]
# The tests are copied out of the checkout so that its own autograd package is not importable.
set -e
here=$(cd "$(dirname "$0")/../../.." && pwd)
src=${1:?path to a checkout of github.com/HIPS/autograd}; shift
work=$(mktemp -d)
cp -r "$src/tests" "$work/tests"
cd "$work/tests"
PYTHONPATH="$here/tests/integration/suites/autograd_shim:$here${PYTHONPATH:+:$PYTHONPATH}" python -m pytest . -q -p no:cacheprovider \
  -o addopts= -o required_plugins= -W ignore "$@"
