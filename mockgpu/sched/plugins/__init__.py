"""One module per in-tree plugin modelled here; ``registry.PLUGINS`` maps upstream names to factories."""
