"""`python -m benchmarks.cost`: see the package's docstring."""

from benchmarks.cost.report import main

main()
