"""Matplotlib's colour maps as constant tables, so that colouring an image needs no Matplotlib
(a private helper of :mod:`engine.course.plot`, whose images and tables use it).

Importing Matplotlib costs about 0.4 s, and once it is imported marimo runs a Matplotlib clean-up
after every cell; the course only looks colours up, so it ships the few maps its pages use:
256 RGB entries per map, each a hex string (``rrggbb`` per entry, darkest or lowest first),
generated once from Matplotlib with::

    from matplotlib import colormaps
    import numpy as np
    colormaps[name](np.arange(256), bytes=True)[:, :3].tobytes().hex()

``tests/course/test_plot.py`` compares every table and :func:`rgba` with ``matplotlib.colormaps``.
"""

from __future__ import annotations

from functools import cache

import numpy as np

TABLES = {
    "gray": (
        "0000000101010202020303030404040505050606060707070808080909090a0a0a0b0b0b0c0c0c0d0d0d0e0e0e0f0f0f"
        "1010101111111212121313131414141515151616161717171818181919191a1a1a1b1b1b1c1c1c1d1d1d1e1e1e1f1f1f"
        "2020202020202222222323232424242424242626262727272828282828282a2a2a2b2b2b2c2c2c2c2c2c2e2e2e2f2f2f"
        "3030303030303232323333333434343434343636363737373838383838383a3a3a3b3b3b3c3c3c3c3c3c3e3e3e3f3f3f"
        "4040404141414141414343434444444545454646464747474848484949494949494b4b4b4c4c4c4d4d4d4e4e4e4f4f4f"
        "5050505151515151515353535454545555555656565757575858585959595959595b5b5b5c5c5c5d5d5d5e5e5e5f5f5f"
        "6060606161616161616363636464646565656666666767676868686969696969696b6b6b6c6c6c6d6d6d6e6e6e6f6f6f"
        "7070707171717171717373737474747575757676767777777878787979797979797b7b7b7c7c7c7d7d7d7e7e7e7f7f7f"
        "8080808181818282828383838383838585858686868787878888888989898a8a8a8b8b8b8c8c8c8d8d8d8e8e8e8f8f8f"
        "9090909191919292929393939393939595959696969797979898989999999a9a9a9b9b9b9c9c9c9d9d9d9e9e9e9f9f9f"
        "a0a0a0a1a1a1a2a2a2a3a3a3a3a3a3a5a5a5a6a6a6a7a7a7a8a8a8a9a9a9aaaaaaabababacacacadadadaeaeaeafafaf"
        "b0b0b0b1b1b1b2b2b2b3b3b3b3b3b3b5b5b5b6b6b6b7b7b7b8b8b8b9b9b9babababbbbbbbcbcbcbdbdbdbebebebfbfbf"
        "c0c0c0c1c1c1c2c2c2c3c3c3c3c3c3c5c5c5c6c6c6c7c7c7c8c8c8c9c9c9cacacacbcbcbcccccccdcdcdcecececfcfcf"
        "d0d0d0d1d1d1d2d2d2d3d3d3d3d3d3d5d5d5d6d6d6d7d7d7d8d8d8d9d9d9dadadadbdbdbdcdcdcdddddddedededfdfdf"
        "e0e0e0e1e1e1e2e2e2e3e3e3e3e3e3e5e5e5e6e6e6e7e7e7e8e8e8e9e9e9eaeaeaebebebecececedededeeeeeeefefef"
        "f0f0f0f1f1f1f2f2f2f3f3f3f3f3f3f5f5f5f6f6f6f7f7f7f8f8f8f9f9f9fafafafbfbfbfcfcfcfdfdfdfefefeffffff"
    ),
    "RdBu_r": (
        "05306106326307346608366909386c0a3a6f0b3c720c3e750d40780e437b0f457e114781124984134b87144d8a154f8d"
        "1651901754931856951958981a5a9b1c5c9e1d5ea11e60a41f62a72064aa2166ac2368ad246aae256caf276db0286fb0"
        "2971b12b73b22c75b32d76b42f78b5307ab6317cb7337db8347fb93581b93783ba3884bb3986bc3b88bd3c8abe3d8bbf"
        "3f8dc0408fc14191c24393c34694c44996c54c98c64f9ac7529cc8559ec958a0ca5ba2cb5ea4cc61a6cd65a8ce68aacf"
        "6bacd06eaed171b0d274b2d377b4d57ab6d67db8d780bad884bcd987beda8ac0db8dc2dc90c4dd93c5de95c6df98c8df"
        "9ac9e09dcae19fcbe1a2cde2a4cee3a7cfe4a9d0e4abd2e5aed3e6b0d4e6b3d5e7b5d7e8b8d8e8bad9e9bddaeabfdceb"
        "c2ddebc4deecc7dfedc9e1edcce2eecee3efd1e5f0d2e5f0d3e6f0d5e7f0d6e7f1d8e8f1d9e9f1dbe9f1dceaf2deebf2"
        "dfecf2e1ecf3e2edf3e4eef3e5eef3e7eff4e8f0f4eaf1f4ebf1f4edf2f5eef3f5f0f3f5f1f4f6f3f5f6f4f5f6f6f6f6"
        "f7f6f6f7f5f4f7f4f2f7f3f0f8f2eef8f0ecf8efeaf8eee8f9ede7f9ece5f9ebe3f9eae1f9e9dffae8ddfae7dbfae5d9"
        "fae4d7fbe3d6fbe2d4fbe1d2fbe0d0fcdfcefcdeccfcddcafcdcc8fddbc7fcd8c4fcd6c1fbd4befbd2bcfbd0b9faceb6"
        "faccb4facab1f9c7aef9c5abf9c3a9f8c1a6f8bfa3f8bda1f7bb9ef7b99bf7b799f6b496f6b293f5b090f5ae8ef5ac8b"
        "f4aa88f4a886f4a683f3a380f2a07ef19e7cef9b7aee9878ed9676ec9374eb9072ea8e70e88b6ee7886ce6856ae58368"
        "e48065e27d63e17b61e0785fdf755dde725bdd7059db6d57da6a55d96853d86551d7624fd6604dd45d4bd35a4ad15749"
        "d05447ce5146cd4f45cc4c43ca4942c94641c7433fc6403ec53e3cc33b3bc2383ac03538bf3237be3036bc2d34bb2a33"
        "b92732b82431b6212fb51f2eb41c2db2192bb0172aad162aaa1529a71429a41328a112289e11279b1027991027960f26"
        "930e26900d258d0c258a0b24870a248409238108237e07227b06227805217504217203206f02206c011f69001f67001f"
    ),
    "Purples": (
        "fcfbfdfbfafcfbfafcfaf9fcfaf9fbf9f8fbf9f8fbf9f7fbf8f7faf8f7faf7f6faf7f6faf7f5f9f6f5f9f6f4f9f5f4f9"
        "f5f3f8f5f3f8f4f3f8f4f2f8f3f2f7f3f1f7f3f1f7f2f0f7f2f0f6f1f0f6f1eff6f0eff6f0eef5f0eef5efedf5efedf5"
        "eeecf4eeecf4edebf4ecebf4eceaf3ebe9f3eae9f3eae8f2e9e8f2e8e7f2e8e6f1e7e6f1e7e5f1e6e5f0e5e4f0e5e3f0"
        "e4e3efe3e2efe3e2efe2e1efe1e1eee1e0eee0dfeedfdfeddfdeeddedeedddddecdddcecdcdcecdbdbebdbdbebdadaeb"
        "d9d9ead8d8ead7d7e9d6d7e9d6d6e9d5d5e8d4d4e8d3d3e7d2d2e7d1d1e6d0d0e6cfcfe5cecee5cdcde4cccde4cbcce3"
        "cacbe3c9cae2c8c9e2c7c8e1c6c7e1c6c6e1c5c5e0c4c4e0c3c3dfc2c3dfc1c2dec0c1debfc0ddbebfddbdbedcbcbddc"
        "bbbcdbbabbdbb9badab8b9d9b7b8d9b6b7d8b6b6d8b5b4d7b4b3d6b3b2d6b2b1d5b1b0d4b0afd4afaed3aeadd2adacd2"
        "acabd1aba9d1aaa8d0a9a7cfa8a6cfa7a5cea6a4cda6a3cda5a2cca4a1cca3a0cba29ecaa19dcaa09cc99f9bc89e9ac8"
        "9d99c79c98c79b97c69a96c69995c69894c59794c59693c49692c49591c39490c3938fc2928ec2918dc2908cc18f8bc1"
        "8e8ac08d8ac08c89bf8b88bf8a87be8986be8885be8784bd8683bd8682bc8581bc8480bb8380bb827fbb817eba807dba"
        "7f7cb97e7ab87e79b87d77b77c76b67c75b57b73b57a72b47a71b3796fb3786eb2776cb1776bb0766ab07568af7567ae"
        "7466ae7364ad7363ac7261ab7160ab715faa705da96f5ca86f5ba86e59a76d58a66c56a66c55a56b54a46a52a36a51a3"
        "6950a2684ea1684da1674ca0664aa066499f65489e64469e63459d63449c62429c61419b61409b603e9a5f3d995f3c99"
        "5e3a985d39975d38975c36965b35955a34955a3394593194583093582f92572d92562c91562b9055299054288f54278f"
        "53258e52248d52238d51228c50218c501f8b4f1e8b4e1d8a4e1c894d1a894c19884c18884b17874a16874a1486491386"
        "481285481184470f84460e83460d83450c82440b8244098143088042078042067f41047f40037e40027e3f017d3f007d"
    ),
}


@cache
def _table(name: str) -> np.ndarray:
    """The map's [256 + 3, 4] uint8 lookup table: its 256 colours, then the colours of values
    below 0 (the first), above 1 (the last) and NaN (transparent black), as Matplotlib has them."""
    rgb = np.frombuffer(bytes.fromhex(TABLES[name]), np.uint8).reshape(256, 3)
    table = np.full((259, 4), 255, np.uint8)
    table[:256, :3] = rgb
    table[256], table[257], table[258] = table[0], table[255], 0
    return table


def rgba(name: str, values, op: str = "plot") -> np.ndarray:
    """uint8 RGBA [..., 4] of ``values`` in [0, 1] under the map ``name``: what
    ``matplotlib.colormaps[name](values, bytes=True)`` gives (a value v in [0, 1) takes entry
    floor(256 v), 1 the last; below 0 the first colour, above 1 the last, NaN transparent).
    ``op`` names the caller in the error for a map not shipped."""
    if name not in TABLES:
        raise ValueError(f"{op}: unknown colour map {name!r}; shipped: {', '.join(TABLES)}")
    table = _table(name)
    scaled = np.asarray(values, dtype=np.float64) * 256
    index = np.where(scaled == 256, 255, scaled)
    index = np.where(index < 0, 256, np.where(index >= 256, 257, index))
    index = np.where(np.isnan(scaled), 258, index)
    return table[index.astype(np.intp)]
