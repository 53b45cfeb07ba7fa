"""skorch's README example: ``NeuralNetClassifier(MyModule, max_epochs=…)`` fitted on
make_classification's data, then ``predict`` and ``save_params``. The fit loop is skorch's
own (``NeuralNet.fit_loop``), with its internal train/validation split."""

import numpy as np
from sklearn.datasets import make_classification
from skorch import NeuralNetClassifier
from torch import nn

X, y = make_classification(1000, 20, n_informative=10, random_state=0)
X = X.astype(np.float32)
y = y.astype(np.int64)


class MyModule(nn.Module):
    def __init__(self, num_units=10, nonlin=None):
        super().__init__()
        self.dense0 = nn.Linear(20, num_units)
        self.nonlin = nonlin or nn.ReLU()
        self.dropout = nn.Dropout(0.5)
        self.dense1 = nn.Linear(num_units, num_units)
        self.output = nn.Linear(num_units, 2)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, X, **kwargs):
        X = self.nonlin(self.dense0(X))
        X = self.dropout(X)
        X = self.nonlin(self.dense1(X))
        return self.softmax(self.output(X))


net = NeuralNetClassifier(
    MyModule,
    max_epochs=50,
    criterion=nn.NLLLoss,
    lr=0.1,
    iterator_train__shuffle=True,
)
net.fit(X, y)
y_pred = net.predict(X[:5])
net.save_params(f_params="model.pkl")
print(f"FINAL: {len(net.history)} epochs, predicted {y_pred.tolist()}, saved")
