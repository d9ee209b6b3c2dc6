"""Rule modules; importing this package registers every rule module in it with stacks.checks."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
