r"""``SAGEConv(aggr=...)`` with :class:`~mzlayers.MZSetTransformerAggregation`
against PyG's :class:`~torch_geometric.nn.aggr.SetTransformerAggregation`:
the neighbourhood of every node is the set, so :obj:`index` is the sorted
destination of every edge.  Both aggregations are built with the same
shared arguments (PyG's defaults, as a user swapping the class would); ours
also in the paper's configuration (:meth:`MZSetTransformerAggregation.paper`).

.. code-block:: text

    python -m mzattn.bench.sage_aggregation [--nodes 2000] [--degree 8] [--repeats 10]
                                            [--out bench/results/sage_aggregation.json]

Times one training step and one inference call (CPU, interleaved), and
records the peak in-degree (PyG pads every neighbourhood to it).
"""
import argparse
import json

import torch
from torch_geometric.nn import SAGEConv
from torch_geometric.nn.aggr import SetTransformerAggregation
from torch_geometric.utils import degree, sort_edge_index

from mzlayers import MZSetTransformerAggregation

from .measure import environment, inference_step, keep_freed_memory, time_interleaved, train_step
from .report import write_text_atomic

CHANNELS = 32


def graph(num_nodes: int, avg_degree: int, seed: int = 0):
    r"""A random graph with power-law-ish in-degrees (a few hubs), edges
    sorted by destination as :class:`SetTransformerAggregation` requires."""
    g = torch.Generator().manual_seed(seed)
    weight = torch.rand(num_nodes, generator=g).pow(4) + 0.01  # skewed popularity
    dst = torch.multinomial(weight, num_nodes * avg_degree, replacement=True, generator=g)
    src = torch.randint(num_nodes, (num_nodes * avg_degree,), generator=g)
    edge_index = sort_edge_index(torch.stack([src, dst]), sort_by_row=False)
    x = torch.randn(num_nodes, CHANNELS, generator=g)
    return x, edge_index


def convs() -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    return {
        'pyg': SAGEConv(CHANNELS, CHANNELS, aggr=SetTransformerAggregation(CHANNELS, heads=4)),
        'ours': SAGEConv(CHANNELS, CHANNELS,
                         aggr=MZSetTransformerAggregation(CHANNELS, heads=4)),
        'ours-paper': SAGEConv(CHANNELS, CHANNELS,
                               aggr=MZSetTransformerAggregation.paper(CHANNELS)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', type=int, default=2000)
    parser.add_argument('--degree', type=int, default=8)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--out', default='bench/results/sage_aggregation.json')
    args = parser.parse_args(argv)
    keep_freed_memory()  # as mzattn-repro bench does
    x, edge_index = graph(args.nodes, args.degree)
    deg = degree(edge_index[1], args.nodes)
    models = convs()
    rows = {name: {'params': sum(p.numel() for p in m.parameters())}
            for name, m in models.items()}
    for mode, step in (('train', train_step), ('inference', inference_step)):
        steps = {name: step(m, (x, edge_index)) for name, m in models.items()}
        for name, t in time_interleaved(steps, torch.device('cpu'), args.repeats).items():
            rows[name][f'{mode}_s'] = t.median
    for name, row in rows.items():
        print(name, json.dumps(row), flush=True)
    result = {'suite': 'sage_aggregation', 'device': 'cpu', 'nodes': args.nodes,
              'edges': edge_index.size(1), 'max_in_degree': int(deg.max()),
              'mean_in_degree': float(deg.mean()), 'channels': CHANNELS,
              'environment': environment(torch.device('cpu')), 'rows': rows}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
