"""Hub Space widget for the `low_frequency` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("low_frequency")

if __name__ == "__main__":
    demo.launch()
