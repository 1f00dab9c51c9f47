#include "inspectorpanel.h"

#include "elidedlabel.h"
#include "keyrow.h"
#include "theme.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QStyle>
#include <QTextBrowser>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

InspectorPanel::InspectorPanel(QWidget* parent) : QWidget(parent)
{
    m_title = new ElidedLabel(this);
    m_title->setObjectName(u"inspectorTitle"_s);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_forceFail = new QPushButton(style()->standardIcon(QStyle::SP_MessageBoxWarning), tr("Force-fail…"), this);
    m_forceFail->setObjectName(u"inspectorForceFail"_s);
    m_purge = new QPushButton(style()->standardIcon(QStyle::SP_TrashIcon), tr("Purge…"), this);
    m_purge->setObjectName(u"inspectorPurge"_s);
    m_stale = new QLabel(this);
    m_stale->setObjectName(u"inspectorStale"_s);
    m_stale->setWordWrap(true);
    m_stale->hide();
    m_browser = new QTextBrowser(this);
    m_browser->setObjectName(u"inspector"_s);
    m_history = new QTextBrowser(this);
    m_history->setObjectName(u"inspectorHistory"_s);
    m_history->setPlaceholderText(tr("The key's history shows here: every change the console saw."));
    auto* split = new QSplitter(Qt::Vertical, this);
    split->setChildrenCollapsible(false);
    split->addWidget(m_browser);
    split->addWidget(m_history);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto* header = new QHBoxLayout;
    header->setContentsMargins(0, 0, 0, 0);
    header->addWidget(m_title, 1);
    header->addWidget(m_forceFail);
    header->addWidget(m_purge);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addLayout(header);
    layout->addWidget(m_stale);
    layout->addWidget(split, 1);

    connect(m_forceFail, &QPushButton::clicked, this, [this] {
        if (!m_key.isEmpty())
            Q_EMIT forceFailRequested(m_key);
    });
    connect(m_purge, &QPushButton::clicked, this, [this] {
        if (!m_key.isEmpty())
            Q_EMIT purgeRequested(m_key);
    });
    clear(tr("Select a key to see its record."));
}

void InspectorPanel::showRecord(const QString& key, const QString& html)
{
    m_key = key;
    m_title->setText(shownText(key));
    // keep the reader's place when the same record is read again (after a scan or an action)
    const int scroll = m_browser->verticalScrollBar() ? m_browser->verticalScrollBar()->value() : 0;
    m_browser->setHtml(html);
    m_browser->verticalScrollBar()->setValue(scroll);
}

void InspectorPanel::showHistory(const QString& key, const QString& html)
{
    if (key != m_key)
        return; // a late answer for another key
    const int scroll = m_history->verticalScrollBar()->value();
    m_history->setHtml(html);
    m_history->verticalScrollBar()->setValue(scroll);
}

void InspectorPanel::showReading(const QString& key)
{
    if (key != m_key)
        m_history->clear();
    m_key = key;
    m_title->setText(shownText(key));
    m_browser->setHtml(tr("<p>Reading %1…</p>").arg(shownText(key).toHtmlEscaped()));
}

void InspectorPanel::setStaleNote(const QString& note)
{
    if (const QString sheet = theme::noteStyle(theme::Severity::Warning, palette()); sheet != m_stale->styleSheet())
        m_stale->setStyleSheet(sheet);
    m_stale->setText(note);
    m_stale->setVisible(!note.isEmpty() && !m_key.isEmpty());
}

void InspectorPanel::clear(const QString& placeholder)
{
    m_key.clear();
    m_title->setText(tr("Inspector"));
    m_browser->clear();
    m_history->clear();
    m_browser->setPlaceholderText(placeholder);
    m_stale->hide();
    setActions(false, false, tr("Select a key first."));
}

void InspectorPanel::setActions(bool forceFail, bool purge, const QString& why)
{
    m_forceFail->setEnabled(forceFail && !m_key.isEmpty());
    m_purge->setEnabled(purge && !m_key.isEmpty());
    m_forceFail->setToolTip(m_forceFail->isEnabled() ? tr("Force-fail this key (asks first)") : why);
    m_purge->setToolTip(m_purge->isEnabled() ? tr("Purge this key (asks first)") : why);
}
