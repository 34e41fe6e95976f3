"""URL admission: canonicalisation (``urls``), the trap filters (``filters``) and
the rules learned from duplicate content (``learning``)."""

from crawler_ext.admission.filters import (
    Admission,
    AdmissionRules,
    differing_parameter,
    renamed_id,
    url_pattern,
)
from crawler_ext.admission.learning import RuleLearning

__all__ = ["Admission", "AdmissionRules", "RuleLearning", "differing_parameter", "renamed_id",
           "url_pattern"]
