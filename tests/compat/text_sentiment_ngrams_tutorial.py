# Compatibility corpus (tests/compat): a public PyTorch program, run with agnostic.
# Source: https://github.com/pytorch/tutorials/blob/5130967035247c8343376ee69f49d6e10d61eaca/beginner_source/text_sentiment_ngrams_tutorial.py
# Licence: BSD-3-Clause, Copyright (c) 2017-2022, Pytorch contributors (pytorch/tutorials LICENSE)
# Changes: imports (`torch` -> `agnostic`; the torchtext imports dropped); data: torchtext's AG_NEWS download is
# replaced by synthetic news made in the program (4 topics, each text mixing words of its topic with shared words;
# a fixed `random.Random(0)`), and the three torchtext helpers it used by small stand-ins (`get_tokenizer` ->
# `str.split`, `build_vocab_from_iterator` -> a dict of token ids with a default index, `to_map_style_dataset` ->
# `list`), lines marked `# compat:`; size: 2,400 train / 400 test texts instead of 120,000 / 7,600, EPOCHS 10 -> 3,
# log_interval 500 -> 10; the opening docstring's prose is shortened (code unchanged).
"""
Text classification with the torchtext library
==============================================

(prose shortened; see the source above)
"""


######################################################################
# Access to the raw dataset iterators
# -----------------------------------
#
# The torchtext library provides a few raw dataset iterators, which yield the raw text strings. For example, the
# ``AG_NEWS`` dataset iterators yield the raw data as a tuple of label and text.
#

import agnostic as torch
import random  # compat

_news_random = random.Random(0)  # compat
_shared_words = ["w%d" % i for i in range(300)]  # compat
_topic_words = {label: ["%s%d" % (topic, i) for i in range(40)]  # compat
                for label, topic in [(1, "world"), (2, "sport"), (3, "business"), (4, "tech")]}  # compat


def _news(count):  # compat: (label, text) pairs as AG_NEWS yields them
    news = []  # compat
    for _ in range(count):  # compat
        label = _news_random.randint(1, 4)  # compat
        words = [_news_random.choice(_topic_words[label] if _news_random.random() < 0.2 else _shared_words)  # compat
                 for _ in range(_news_random.randint(10, 40))]  # compat
        news.append((label, " ".join(words)))  # compat
    return news  # compat


_train_news, _test_news = _news(2400), _news(400)  # compat


def AG_NEWS(split=("train", "test")):  # compat: the synthetic news in place of torchtext.datasets.AG_NEWS
    by_split = {"train": _train_news, "test": _test_news}  # compat
    return by_split[split] if isinstance(split, str) else tuple(by_split[name] for name in split)  # compat


train_iter = iter(AG_NEWS(split="train"))


######################################################################
# Prepare data processing pipelines
# ---------------------------------
#
# The first step is to build a vocabulary with the raw training dataset.


class _Vocab(dict):  # compat: torchtext's Vocab, token -> id, unknown tokens -> the default index
    def set_default_index(self, index):  # compat
        self.default_index = index  # compat

    def __call__(self, tokens):  # compat
        return [self.get(token, self.default_index) for token in tokens]  # compat


def build_vocab_from_iterator(iterator, specials):  # compat: torchtext.vocab.build_vocab_from_iterator
    vocab = _Vocab({special: index for index, special in enumerate(specials)})  # compat
    for tokens in iterator:  # compat
        for token in tokens:  # compat
            vocab.setdefault(token, len(vocab))  # compat
    return vocab  # compat


tokenizer = str.split  # compat: get_tokenizer("basic_english")
train_iter = AG_NEWS(split="train")


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


vocab = build_vocab_from_iterator(yield_tokens(train_iter), specials=["<unk>"])
vocab.set_default_index(vocab["<unk>"])

######################################################################
# Prepare the text processing pipeline with the tokenizer and vocabulary. The text and label pipelines will be used
# to process the raw data strings from the dataset iterators.

text_pipeline = lambda x: vocab(tokenizer(x))
label_pipeline = lambda x: int(x) - 1


######################################################################
# Generate data batch and iterator
# --------------------------------
#
# In this example, the text entries in the original data batch input are packed into a list and concatenated as a
# single tensor for the input of ``nn.EmbeddingBag``. The offset is a tensor of delimiters to represent the beginning
# index of the individual sequence in the text tensor. Label is a tensor saving the labels of individual text entries.


from agnostic.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


train_iter = AG_NEWS(split="train")
dataloader = DataLoader(
    train_iter, batch_size=8, shuffle=False, collate_fn=collate_batch
)


######################################################################
# Define the model
# ----------------
#
# The model is composed of the ``nn.EmbeddingBag`` layer plus a linear layer for the classification purpose.
# ``nn.EmbeddingBag`` with the default mode of "mean" computes the mean value of a "bag" of embeddings.
#

from agnostic import nn


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


######################################################################
# Initiate an instance
# --------------------
#
# The ``AG_NEWS`` dataset has four labels and therefore the number of classes is four.
# We build a model with the embedding dimension of 64.
#

train_iter = AG_NEWS(split="train")
num_class = len(set([label for (label, text) in train_iter]))
vocab_size = len(vocab)
emsize = 64
model = TextClassificationModel(vocab_size, emsize, num_class).to(device)


######################################################################
# Define functions to train the model and evaluate results.
# ---------------------------------------------------------
#


import time


def train(dataloader):
    model.train()
    total_acc, total_count = 0, 0
    log_interval = 10  # compat: 500 -> 10
    start_time = time.time()

    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            print(
                "| epoch {:3d} | {:5d}/{:5d} batches "
                "| accuracy {:8.3f}".format(
                    epoch, idx, len(dataloader), total_acc / total_count
                )
            )
            total_acc, total_count = 0, 0
            start_time = time.time()


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0

    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


######################################################################
# Split the dataset and run the model
# -----------------------------------
#
# Since the original ``AG_NEWS`` has no valid dataset, we split the training dataset into train/valid sets with a
# split ratio of 0.95 (train) and 0.05 (valid). The initial learning rate is set to 5.0. ``StepLR`` is used here to
# adjust the learning rate through epochs.
#


from agnostic.utils.data.dataset import random_split
to_map_style_dataset = list  # compat: torchtext.data.functional.to_map_style_dataset

# Hyperparameters
EPOCHS = 3  # epoch  # compat: 10 -> 3
LR = 5  # learning rate
BATCH_SIZE = 64  # batch size for training

criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
train_iter, test_iter = AG_NEWS()
train_dataset = to_map_style_dataset(train_iter)
test_dataset = to_map_style_dataset(test_iter)
num_train = int(len(train_dataset) * 0.95)
split_train_, split_valid_ = random_split(
    train_dataset, [num_train, len(train_dataset) - num_train]
)

train_dataloader = DataLoader(
    split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
valid_dataloader = DataLoader(
    split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
test_dataloader = DataLoader(
    test_dataset, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)

for epoch in range(1, EPOCHS + 1):
    epoch_start_time = time.time()
    train(train_dataloader)
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print("-" * 59)
    print(
        "| end of epoch {:3d} | time: {:5.2f}s | "
        "valid accuracy {:8.3f} ".format(
            epoch, time.time() - epoch_start_time, accu_val
        )
    )
    print("-" * 59)


######################################################################
# Evaluate the model with test dataset
# ------------------------------------
#


######################################################################
# Checking the results of the test dataset…

print("Checking the results of test dataset.")
accu_test = evaluate(test_dataloader)
print("test accuracy {:8.3f}".format(accu_test))


######################################################################
# Test on a random news
# ---------------------
#
# Use the best model so far and test a golf news.
#


ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


ex_text_str = "MEMPHIS, Tenn. – Four days ago, Jon Rahm was \
    enduring the season’s worst weather conditions on Sunday at The \
    Open on his way to a closing 75 at Royal Portrush, which \
    considering the wind and the rain was a respectable showing. \
    Thursday’s first round at the WGC-FedEx St. Jude Invitational \
    was another story. With temperatures in the mid-80s and hardly any \
    wind, the Spaniard was 13 strokes better in a flawless round. \
    Thanks to his best putting performance on the PGA Tour, Rahm \
    finished with an 8-under 62 for a three-stroke lead, which \
    was even more impressive considering he’d never played the \
    front nine at TPC Southwind."

model = model.to("cpu")

print("This is a %s news" % ag_news_label[predict(ex_text_str, text_pipeline)])
