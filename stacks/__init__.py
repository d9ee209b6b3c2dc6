"""Stack configs: models, catalogs, pre-flight checks and the command line. Creates no resources."""
