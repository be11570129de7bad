"""The shipped training configs (YAML), installed with the package: ``treppen train --config NAME``
finds them by name (:func:`treppen.train.config.config_path`)."""
