"""Hub Space widget for the `dialspk` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("dialspk")

if __name__ == "__main__":
    demo.launch()
