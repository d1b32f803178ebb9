.PHONY: install lint typecheck test check bench

install:
	pip install -e '.[dev]'

lint:
	ruff check .
	ruff format --check .

typecheck:
	mypy

test:
	pytest

check: lint typecheck test

bench:
	python bench/startup.py
	python bench/throughput.py
	python bench/parallel.py
