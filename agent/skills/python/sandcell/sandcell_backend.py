"""matplotlib backend for sandcell runs (MPLBACKEND=module://sandcell_backend).

Renders with Agg; plt.show() writes every open figure to /workspace/out/figure-N.png, so a
program written for a screen hands its plots back as artifacts of the run.
"""
import os

from matplotlib import _pylab_helpers
from matplotlib.backend_bases import _Backend
from matplotlib.backends.backend_agg import _BackendAgg

OUT_DIR = os.environ.get("SANDCELL_OUT", "/workspace/out")


def _free_path():
    # Numbered after what is already there: calls of one session add figures, never overwrite.
    os.makedirs(OUT_DIR, exist_ok=True)
    n = 1
    while os.path.lexists(os.path.join(OUT_DIR, f"figure-{n}.png")):
        n += 1
    return os.path.join(OUT_DIR, f"figure-{n}.png")


@_Backend.export
class _BackendSandcell(_BackendAgg):
    @classmethod
    def show(cls, *args, **kwargs):
        for manager in _pylab_helpers.Gcf.get_all_fig_managers():
            manager.canvas.figure.savefig(_free_path())
        _pylab_helpers.Gcf.destroy_all()
