"""Hub Space widget for the `sem_ent` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("sem_ent")

if __name__ == "__main__":
    demo.launch()
