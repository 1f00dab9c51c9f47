#include "replaywidget.h"

#include "replaylanes.h"
#include "streampickerdialog.h"
#include "theme.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

namespace {
constexpr int kPreviewRows = 1000;
const char* const kCounts[] = {"executed", "twice", "lost", "claimed", "deliveries", "crashes"};

// How long the log lasts as logged, in ms.
std::int64_t loggedSpanMs(const std::vector<idem::ReplayEvent>& events)
{
    if (events.empty())
        return 0;
    const auto [lo, hi] = std::minmax_element(events.begin(), events.end(),
                                              [](const auto& a, const auto& b) { return a.atMs < b.atMs; });
    return hi->atMs - lo->atMs;
}

} // namespace

QString ReplayWidget::seconds(double s)
{
    if (s < 120)
        return QObject::tr("%1 s").arg(s, 0, 'f', 1);
    if (s < 7200)
        return QObject::tr("%1 min").arg(s / 60, 0, 'f', 1);
    return QObject::tr("%1 h").arg(s / 3600, 0, 'f', 1);
}

ReplayWidget::ReplayWidget(QWidget* parent) : QWidget(parent), m_runner(new ReplayRunner)
{
    m_thread.setObjectName(u"idem-replay"_s);
    m_runner->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_runner, &QObject::deleteLater);
    m_thread.start();

    m_logLabel = new QLabel(tr("No event log yet: open one, or capture one from a stream."), this);
    m_logLabel->setObjectName(u"logLabel"_s);
    m_logLabel->setWordWrap(true);
    m_open = new QPushButton(tr("Open log…"), this);
    m_open->setObjectName(u"openLog"_s);
    m_open->setToolTip(tr("An event log: JSON lines of {\"id\", \"payload\", \"at_ms\"} (idemctl capture writes them)"));
    m_capture = new QPushButton(tr("From a stream…"), this);
    m_capture->setObjectName(u"captureStream"_s);
    m_capture->setToolTip(tr("Capture the entries of a Redis Stream of the connected server (read-only: XRANGE)"));
    m_save = new QPushButton(tr("Save log…"), this);
    m_save->setObjectName(u"saveLog"_s);

    m_where = new QComboBox(this);
    m_where->setObjectName(u"where"_s);
    m_where->addItem(tr("Private redis-server"), static_cast<int>(Where::Private));
    m_where->addItem(tr("Connected server (own namespace)"), static_cast<int>(Where::Connected));
    m_where->setItemData(0, tr("A redis-server of the replay's own, started on first use and stopped with the "
                               "console: nothing else sees its keys."),
                         Qt::ToolTipRole);
    m_whereNote = new QLabel(this);
    m_whereNote->setObjectName(u"whereNote"_s);
    m_whereNote->setWordWrap(true);
    m_speed = new QComboBox(this);
    m_speed->setObjectName(u"speed"_s);
    m_speed->addItem(tr("As fast as possible"), 0.0);
    for (double s : {0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0})
        m_speed->addItem(u"×%1"_s.arg(s), s);
    m_speed->setCurrentIndex(3); // ×1: as logged
    m_speed->setToolTip(tr("Paced by the logged times (at_ms), slower or faster; or as fast as the consumers go"));
    auto spin = [this](int lo, int hi, int v, const QString& tip) {
        auto* s = new QSpinBox(this);
        s->setRange(lo, hi);
        s->setValue(v);
        s->setToolTip(tip);
        return s;
    };
    m_duplicates = spin(1, 20, 2, tr("How many times each event is delivered"));
    m_duplicates->setObjectName(u"duplicates"_s);
    m_consumers = spin(1, 64, 3, tr("Consumers taking deliveries at once, each with its own connections"));
    m_consumers->setObjectName(u"consumers"_s);
    m_seed = spin(0, 1'000'000, 1, tr("The same seed gives the same duplicates and crashes"));
    m_reorder = spin(0, 60'000, 0, tr("Each delivery is shifted by a random 0 to this many ms, so deliveries of "
                                      "nearby events change places (idemctl replay --reorder)"));
    m_reorder->setObjectName(u"reorder"_s);
    m_reorder->setSuffix(tr(" ms"));
    m_seed->setObjectName(u"seed"_s);
    m_crash = new QDoubleSpinBox(this);
    m_crash->setObjectName(u"crashRate"_s);
    m_crash->setRange(0, 1);
    m_crash->setSingleStep(0.05);
    m_crash->setValue(0.1);
    m_crash->setToolTip(tr("A consumer dies after acquiring, before acknowledging; the delivery comes again later"));
    m_delivery = new QComboBox(this);
    m_delivery->setObjectName(u"delivery"_s);
    m_delivery->addItem(tr("Direct"), false);
    m_delivery->addItem(tr("Through a stream group"), true);
    m_delivery->setItemData(1, tr("Each delivery an XADD; consumers read with XREADGROUP, acknowledge with XACK, and "
                                  "take over what a dead consumer left pending with XAUTOCLAIM"),
                            Qt::ToolTipRole);

    auto* logButtons = new QHBoxLayout;
    logButtons->addWidget(m_open);
    logButtons->addWidget(m_capture);
    auto* form = new QFormLayout;
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    form->addRow(m_logLabel);
    form->addRow(logButtons);
    form->addRow(m_save);
    form->addRow(tr("Where:"), m_where);
    form->addRow(m_whereNote);
    form->addRow(tr("Speed:"), m_speed);
    form->addRow(tr("Deliveries each:"), m_duplicates);
    form->addRow(tr("Reorder by up to:"), m_reorder);
    form->addRow(tr("Crash rate:"), m_crash);
    form->addRow(tr("Consumers:"), m_consumers);
    form->addRow(tr("Delivery:"), m_delivery);
    form->addRow(tr("Seed:"), m_seed);
    auto* controls = new QWidget(this);
    controls->setLayout(form);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(u"replayControls"_s);
    scroll->setWidget(controls);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFrameShape(QFrame::NoFrame);

    m_play = new QPushButton(tr("▶ Play"), this);
    m_play->setObjectName(u"play"_s);
    m_pause = new QPushButton(tr("‖ Pause"), this);
    m_pause->setObjectName(u"pause"_s);
    m_pause->setToolTip(tr("No further delivery starts; the replay's clock stands still until Play"));
    m_step = new QPushButton(tr("⇥ Step"), this);
    m_step->setObjectName(u"step"_s);
    m_step->setToolTip(tr("Paused: the next delivery starts now. Before a replay: start one paused, with one delivery"));
    m_stop = new QPushButton(tr("■ Stop"), this);
    m_stop->setObjectName(u"stop"_s);
    m_exportJson = new QPushButton(tr("Result: JSON…"), this);
    m_exportCsv = new QPushButton(tr("CSV…"), this);
    m_exportPng = new QPushButton(tr("PNG…"), this);
    m_exportPng->setObjectName(u"exportPng"_s);
    m_exportPng->setToolTip(tr("The counts and the swimlanes (or the keys) as shown"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(m_play);
    bar->addWidget(m_pause);
    bar->addWidget(m_step);
    bar->addWidget(m_stop);
    bar->addStretch(1);
    auto* exports = new QHBoxLayout; // under the result: the control row stays narrow at large fonts
    exports->addStretch(1);
    exports->addWidget(m_exportJson);
    exports->addWidget(m_exportCsv);
    exports->addWidget(m_exportPng);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(u"progress"_s);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setFormat(tr("not started"));

    auto* counts = new QGridLayout;
    const QString captions[] = {tr("executed"),   tr("ran twice"), tr("lost"),
                                tr("claimed (XAUTOCLAIM)"), tr("deliveries"), tr("consumer crashes")};
    QFont big = font();
    big.setPointSizeF(big.pointSizeF() * 1.6);
    big.setBold(true);
    for (int i = 0; i < 6; ++i) {
        auto* value = new QLabel(u"—"_s, this);
        value->setObjectName(u"count-"_s + QLatin1StringView(kCounts[i]));
        value->setFont(big);
        value->setAlignment(Qt::AlignCenter);
        auto* caption = new QLabel(captions[i], this);
        caption->setAlignment(Qt::AlignCenter);
        caption->setWordWrap(true);
        counts->addWidget(value, 0, i);
        counts->addWidget(caption, 1, i);
        counts->setColumnStretch(i, 1);
        m_counts.insert(QLatin1StringView(kCounts[i]), value);
    }
    m_status = new QLabel(this);
    m_status->setObjectName(u"replayStatus"_s);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    m_status->setMinimumHeight(fontMetrics().height() * 2 + 8);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_preview = new QTableWidget(0, 3, this);
    m_preview->setObjectName(u"logPreview"_s);
    m_preview->setHorizontalHeaderLabels({tr("at"), tr("id"), tr("payload")});
    m_preview->verticalHeader()->hide();
    m_preview->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_preview->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_preview->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Interactive);
    m_preview->horizontalHeader()->setStretchLastSection(true);
    m_preview->setWordWrap(false);

    m_lanes = new ReplayLanes(this);
    m_lanes->tabs()->insertTab(0, m_preview, tr("Event log"));
    m_lanes->tabs()->setCurrentIndex(0);
    m_resultView = new QWidget(this);
    auto* result = new QVBoxLayout(m_resultView);
    result->setContentsMargins(0, 0, 0, 0);
    result->addWidget(m_progress);
    result->addLayout(counts);
    result->addWidget(m_status);
    result->addWidget(m_lanes, 1);
    result->addLayout(exports);
    auto* rightSide = new QVBoxLayout;
    rightSide->addLayout(bar);
    rightSide->addWidget(m_resultView, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(scroll);
    layout->addLayout(rightSide, 1);
    scroll->setFixedWidth(std::max(controls->minimumSizeHint().width(), fontMetrics().averageCharWidth() * 34) +
                          scroll->verticalScrollBar()->sizeHint().width());

    connect(m_play, &QPushButton::clicked, this, &ReplayWidget::play);
    connect(m_pause, &QPushButton::clicked, this, &ReplayWidget::pause);
    connect(m_step, &QPushButton::clicked, this, &ReplayWidget::step);
    connect(m_stop, &QPushButton::clicked, this, &ReplayWidget::stop);
    connect(m_capture, &QPushButton::clicked, this, &ReplayWidget::captureFromStream);
    connect(m_where, &QComboBox::currentIndexChanged, this, &ReplayWidget::updateWhere);
    connect(m_open, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getOpenFileName(this, tr("Open an event log"), QString(),
                                                       tr("Event logs (*.jsonl *.json *.log);;All files (*)"));
        if (!p.isEmpty())
            openLog(p);
    });
    connect(m_save, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Save the event log"), u"events.jsonl"_s,
                                                       tr("Event logs (*.jsonl)"));
        if (!p.isEmpty() && !saveLog(p))
            m_status->setText(tr("Could not write %1").arg(p));
    });
    connect(m_exportJson, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Result as JSON"), u"replay-result.json"_s,
                                                       tr("JSON (*.json)"));
        if (!p.isEmpty() && !exportJson(p))
            m_status->setText(tr("Could not write %1").arg(p));
    });
    connect(m_exportCsv, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Result as CSV"), u"replay-result.csv"_s,
                                                       tr("CSV (*.csv)"));
        if (!p.isEmpty() && !exportCsv(p))
            m_status->setText(tr("Could not write %1").arg(p));
    });
    connect(m_exportPng, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Result as PNG"), u"replay-result.png"_s,
                                                       tr("PNG (*.png)"));
        if (!p.isEmpty() && !exportPng(p))
            m_status->setText(tr("Could not write %1").arg(p));
    });

    connect(m_runner, &ReplayRunner::progressed, this, [this](quint64 id, const idem::ReplayProgress& p) {
        if (id == m_job && m_running)
            showProgress(p);
    });
    connect(m_runner, &ReplayRunner::finished, this,
            [this](quint64 id, const idem::ReplayResult& r, const QString& where) {
                if (id != m_job)
                    return; // a run this view no longer waits for
                m_running = m_paused = false;
                m_lastWhere = where;
                showResult(r);
                updateButtons();
                Q_EMIT finished();
            });
    connect(m_runner, &ReplayRunner::captured, this,
            [this](quint64 id, const EventLog& events, qulonglong read, const QStringList& problems) {
                if (id != m_job)
                    return;
                m_capturing = false;
                const QString source = m_source;
                setLog(events, source);
                m_status->setText(problems.isEmpty()
                                      ? tr("Captured %1 event(s) from %2 entries of %3.").arg(events->size()).arg(read).arg(source)
                                      : tr("Captured %1 event(s) from %2 entries of %3; skipped %4:\n%5")
                                            .arg(events->size())
                                            .arg(read)
                                            .arg(source)
                                            .arg(read - events->size())
                                            .arg(problems.join(u'\n')));
                updateButtons();
                Q_EMIT captured();
            });
    connect(m_runner, &ReplayRunner::streamsListed, this, [this](quint64 id, const QVector<StreamEntry>& streams) {
        if (id == m_job && m_picker)
            m_picker->setStreams(streams);
    });
    connect(m_runner, &ReplayRunner::failed, this, [this](quint64 id, const QString& message) {
        if (id != m_job)
            return;
        if (m_picker && m_picker->isVisible() && !m_capturing) {
            m_picker->setFailed(message);
            return;
        }
        const bool wasRunning = m_running;
        m_running = m_capturing = m_paused = false;
        m_progress->setFormat(tr("failed"));
        m_status->setText((wasRunning ? tr("The replay could not run: %1") : tr("The capture failed: %1")).arg(message));
        updateButtons();
        Q_EMIT failed(m_status->text());
    });
    updateWhere();
    updateButtons();
}

ReplayWidget::~ReplayWidget()
{
    m_runner->cancel(); // a replay under way starts no further delivery
    m_thread.quit();
    m_thread.wait();
}

QLabel* ReplayWidget::countLabel(const QString& name) const { return m_counts.value(name); }

void ReplayWidget::setConnectedServer(const std::optional<idem::ConnectionOptions>& connection, const QString& name)
{
    m_connected = connection;
    m_connectedName = name;
    updateWhere();
    updateButtons();
}

void ReplayWidget::setConnectedWritable(bool writable, const QString& whyNot)
{
    if (writable == m_connectedWritable && whyNot == m_connectedWhyNot)
        return;
    m_connectedWritable = writable;
    m_connectedWhyNot = whyNot;
    updateWhere();
}

void ReplayWidget::updateWhere()
{
    const bool usable = m_connected && m_connectedWritable;
    auto* model = qobject_cast<QStandardItemModel*>(m_where->model());
    if (QStandardItem* item = model ? model->item(1) : nullptr) {
        item->setEnabled(usable);
        item->setToolTip(usable ? tr("Under a namespace of its own on %1, after a confirmation.").arg(m_connectedName)
                                : tr("Not available: %1").arg(m_connectedWhyNot.isEmpty() ? tr("not connected")
                                                                                          : m_connectedWhyNot));
    }
    if (!usable && m_where->currentIndex() == 1)
        m_where->setCurrentIndex(0);
    const bool connected = m_where->currentData().toInt() == static_cast<int>(Where::Connected);
    m_whereNote->setText(connected ? tr("Writes records and ledgers under a namespace of its own on %1, never in the "
                                        "one the console watches; asks first.")
                                         .arg(m_connectedName)
                                   : tr("On a redis-server of its own: nothing else sees its keys."));
}

void ReplayWidget::updateButtons()
{
    const bool busy = m_running || m_capturing;
    const bool haveLog = m_events && !m_events->empty();
    m_play->setEnabled((!busy && haveLog) || (m_running && m_paused));
    m_play->setText(m_running && m_paused ? tr("▶ Resume") : tr("▶ Play"));
    m_pause->setEnabled(m_running && !m_paused);
    m_step->setEnabled((!busy && haveLog) || (m_running && m_paused));
    m_stop->setEnabled(busy);
    m_exportPng->setEnabled(!m_capturing && (m_running || m_result.has_value()));
    m_open->setEnabled(!busy);
    m_capture->setEnabled(!busy && m_connected.has_value());
    m_capture->setToolTip(m_connected ? tr("Capture the entries of a Redis Stream of %1 (read-only: XRANGE)")
                                            .arg(m_connectedName)
                                      : tr("Not connected to a server"));
    m_save->setEnabled(!busy && haveLog);
    m_exportJson->setEnabled(!busy && m_result.has_value());
    m_exportCsv->setEnabled(!busy && m_result.has_value());
    for (QWidget* w : std::initializer_list<QWidget*>{m_where, m_speed, m_duplicates, m_reorder, m_crash, m_consumers,
                                                      m_delivery, m_seed})
        w->setEnabled(!busy);
}

void ReplayWidget::setLog(const EventLog& events, const QString& source)
{
    m_events = events;
    m_source = source;
    m_result.reset();
    for (auto* l : std::as_const(m_counts))
        l->setText(u"—"_s);
    m_progress->setValue(0);
    m_progress->setFormat(tr("not started"));
    const std::int64_t span = events ? loggedSpanMs(*events) : 0;
    const int n = events ? int(events->size()) : 0;
    m_logLabel->setText(tr("<b>%1</b><br>%n event(s) over %2 as logged", nullptr, n)
                            .arg(source.toHtmlEscaped(), seconds(static_cast<double>(span) / 1000.0)));
    m_preview->setRowCount(0);
    if (events) {
        const int rows = std::min(n, kPreviewRows);
        m_preview->setRowCount(rows);
        const std::int64_t first = events->empty() ? 0 : std::min_element(events->begin(), events->end(), [](const auto& a, const auto& b) {
                                                             return a.atMs < b.atMs;
                                                         })->atMs;
        for (int i = 0; i < rows; ++i) {
            const auto& e = (*events)[static_cast<std::size_t>(i)];
            auto* at = new QTableWidgetItem(u"+%1 s"_s.arg(static_cast<double>(e.atMs - first) / 1000.0, 0, 'f', 3));
            at->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_preview->setItem(i, 0, at);
            m_preview->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(e.id)));
            m_preview->setItem(i, 2, new QTableWidgetItem(QString::fromStdString(e.payload.substr(0, 300))));
        }
        m_preview->setColumnWidth(1, fontMetrics().averageCharWidth() * 18);
    }
    updateButtons();
}

idem::ReplayOptions ReplayWidget::chosenOptions() const
{
    idem::ReplayOptions o;
    o.speed = m_speed->currentData().toDouble();
    o.duplicates = m_duplicates->value();
    o.reorder = idem::Millis(m_reorder->value());
    o.crashRate = m_crash->value();
    o.consumers = m_consumers->value();
    o.viaStream = m_delivery->currentData().toBool();
    o.seed = static_cast<std::uint64_t>(m_seed->value());
    // long enough for the logged pace, and a minute for what comes after
    const double paced = o.speed > 0 && m_events ? static_cast<double>(loggedSpanMs(*m_events)) / o.speed : 0;
    o.timeout = idem::Millis(static_cast<std::int64_t>(paced) + m_reorder->value() + 60'000);
    o.keyNamespace = "replay";
    return o;
}
