"""The shipped training configs (YAML), installed with the package: ``treppen train --config NAME``
finds them by name (:func:`treppen.train.common.config_files.config_path`)."""
