"""The bench times every traversal template with the parameters the template reads."""

import re

from heirloom.domain.graph_queries import TEMPLATES
from heirloom_dev.bench.corpus import build_samples, generate_corpus, template_params


def test_every_template_gets_the_parameters_it_reads():
    corpus = generate_corpus(40)
    for sample in build_samples(corpus, 5):
        params = template_params(sample, 10)
        assert set(params) == set(TEMPLATES) - {"described", "overview"}
        for name, given in params.items():
            missing = set(re.findall(r"\$(\w+)", TEMPLATES[name])) - set(given)
            assert not missing, f"{name} reads {missing}"
