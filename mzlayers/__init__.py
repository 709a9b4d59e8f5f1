r"""mzlayers: Matrix Zonotopic Attention layers for PyTorch Geometric.

Every layer takes a flat PyG batch of sets (:obj:`x [N, F]` with a sorted
:obj:`batch [N]` vector) and never pads in its public interface.
"""
from mzlayers.aggregation import MZSetTransformerAggregation
from mzlayers.attention import BACKENDS, set_attention
from mzlayers.blocks import ISAB, MAB, PMA, SAB
from mzlayers.configs import CONFIGS, build_set_transformer, count_parameters
from mzlayers.embedding import ZonotopeEmbedding
from mzlayers.feedforward import FeedForward
from mzlayers.layout import SetLayout
from mzlayers.multihead import MultiheadSetAttention
from mzlayers.mz_attention import MZMultiheadAttention, set_recompute
from mzlayers.mz_blocks import MZISAB, MZMAB, MZPMA, MZSAB, ZonotopeLayerNorm
from mzlayers.mz_set_transformer import MZSetTransformer, MZSetTransformerEncoder
from mzlayers.pooling_head import PoolingHead
from mzlayers.set_transformer import SetTransformer
from mzlayers.static import bucket_batch, bucket_size
from mzlayers.summary import SetSummary
from mzlayers.zonotope import Zonotope

__version__ = '0.1.0'

__all__ = [
    'Zonotope',
    'SetLayout',
    'set_attention',
    'BACKENDS',
    'FeedForward',
    'MultiheadSetAttention',
    'MAB',
    'SAB',
    'ISAB',
    'PMA',
    'PoolingHead',
    'SetTransformer',
    'ZonotopeEmbedding',
    'SetSummary',
    'MZMultiheadAttention',
    'set_recompute',
    'ZonotopeLayerNorm',
    'MZMAB',
    'MZSAB',
    'MZISAB',
    'MZPMA',
    'MZSetTransformerEncoder',
    'MZSetTransformer',
    'MZSetTransformerAggregation',
    'CONFIGS',
    'build_set_transformer',
    'count_parameters',
    'bucket_batch',
    'bucket_size',
]
