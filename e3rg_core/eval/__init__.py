"""Evaluation on AvaMERG-format data: the loader, the challenge's metrics, the batch run.

* ``avamerg``: ``load_avamerg(path, media_dir=...)`` -> conversations + a load report;
* ``metrics``: HIT, fine accuracy, macro-F1, confusion, Dist-n (E3RG's and corpus-level);
* ``run``: ``run_eval(EvalOptions(...))``, wrapped by ``python -m e3rg_core.eval``; ``report``: its summary and table.

Importing this package loads no model.
"""

from e3rg_core.eval.avamerg import SAMPLE_DIR, Dataset, LoadReport, load_avamerg

__all__ = ["SAMPLE_DIR", "Dataset", "LoadReport", "load_avamerg"]
