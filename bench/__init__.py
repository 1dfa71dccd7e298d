"""gitdeploy's benchmarks (issue 11): ``python bench/run.py --help``. Not tests: figures vary by machine."""
