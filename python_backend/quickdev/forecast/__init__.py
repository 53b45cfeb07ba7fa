"""Will it fit? A forecast of the GPU memory of one training step, made without a GPU.

The job observes the script's first real step (``limits/forecast_capture.py``) and this
package replays it on fake tensors (``FakeTensorMode``: shapes and dtypes, no storage)
under torch's ``MemTracker``, at the script's own batch size and at the sizes a
batch-size search tries. Nothing here allocates the real sizes or touches the user's
tensors' values.
"""
