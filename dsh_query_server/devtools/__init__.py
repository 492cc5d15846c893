"""Developer tools: generators checked for drift by the tests, and the structure check.

Nothing at run time imports this package; it sits above every layer (devtools/layers.py).
"""
