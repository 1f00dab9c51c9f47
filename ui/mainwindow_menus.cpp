// MainWindow: the actions, menus, toolbar and shortcuts.
#include "mainwindow.h"

#include "keyfilterproxy.h"
#include "settings.h"

#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QShortcut>
#include <QStyle>
#include <QTableWidget>
#include <QToolBar>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

void MainWindow::buildActions()
{
    auto* toolbar = addToolBar(tr("Actions"));
    toolbar->setObjectName(u"actions"_s);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto* file = menuBar()->addMenu(tr("&File"));
    auto* keys = menuBar()->addMenu(tr("&Keys"));
    auto* view = menuBar()->addMenu(tr("&View"));
    auto* help = menuBar()->addMenu(tr("&Help"));

    auto* connectAct = file->addAction(style()->standardIcon(QStyle::SP_DriveNetIcon), tr("&Connect…"), this,
                                       &MainWindow::openConnectDialog);
    connectAct->setShortcut(QKeySequence::Open);
    auto* exportAct = file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Export view…"), this,
                                      &MainWindow::exportView);
    exportAct->setShortcut(Qt::CTRL | Qt::Key_E);
    file->addSeparator();
    auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
    quit->setShortcut(QKeySequence::Quit);

    auto* refreshAct = view->addAction(style()->standardIcon(QStyle::SP_BrowserReload), tr("&Refresh"), this,
                                       &MainWindow::refresh);
    refreshAct->setShortcut(QKeySequence::Refresh);
    auto* find = view->addAction(tr("&Filter"), this, [this] {
        m_filter->setFocus();
        m_filter->selectAll();
    });
    find->setShortcut(QKeySequence::Find);
    // Esc is the window's (a QShortcut): here it is only shown, so an open menu's Esc closes the menu
    view->addAction(tr("&Clear the filter") + u"\tEsc"_s, this, &MainWindow::clearFilter);
    auto* audit = view->addAction(style()->standardIcon(QStyle::SP_FileDialogDetailedView), tr("&Audit trail…"),
                                  this, &MainWindow::showAuditTrail);
    audit->setShortcut(Qt::CTRL | Qt::Key_L);
    view->addSeparator();
    auto* keysTab = view->addAction(tr("&Keys"), this, [this] { m_tabs->setCurrentIndex(0); });
    keysTab->setShortcut(Qt::ALT | Qt::Key_1);
    auto* labTab = view->addAction(tr("&Race lab"), this, [this] { m_tabs->setCurrentIndex(1); });
    labTab->setShortcut(Qt::ALT | Qt::Key_2);

    m_forceFail = keys->addAction(style()->standardIcon(QStyle::SP_MessageBoxWarning), tr("&Force-fail selected…"),
                                  this, &MainWindow::forceFailSelected);
    m_forceFail->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_F);
    m_purge = keys->addAction(style()->standardIcon(QStyle::SP_TrashIcon), tr("&Purge selected…"), this,
                              &MainWindow::purgeSelected);
    m_purge->setShortcut(QKeySequence::Delete);
    keys->addSeparator();
    m_forceFailAll = keys->addAction(tr("Force-fail all &filtered…"), this, &MainWindow::forceFailFiltered);
    m_purgeAll = keys->addAction(tr("Purge all f&iltered…"), this, &MainWindow::purgeFiltered);
    keys->addSeparator();
    m_readOnlyAction = keys->addAction(tr("&Read-only"), this, &MainWindow::setReadOnly);
    m_readOnlyAction->setObjectName(u"readOnlyToggle"_s);
    m_readOnlyAction->setCheckable(true);

    auto* shortcuts = help->addAction(tr("&Keyboard shortcuts…"), this, &MainWindow::showShortcuts);
    shortcuts->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About idem console"), this, [this] {
        QMessageBox::about(this, tr("About idem console"),
                           tr("<h3>idem console %1</h3><p>The operator console of idem, an idempotency layer on Redis: "
                              "the keys of a store by state, live, with force-fail and purge behind a confirmation "
                              "and an audit trail, and the race lab.</p>")
                               .arg(QApplication::applicationVersion()));
    });

    toolbar->addAction(connectAct);
    toolbar->addAction(refreshAct);
    toolbar->addSeparator();
    toolbar->addAction(m_forceFail);
    toolbar->addAction(m_purge);
    toolbar->addSeparator();
    toolbar->addAction(exportAct);
    toolbar->addAction(audit);
    toolbar->addAction(m_readOnlyAction);
}

void MainWindow::showShortcuts()
{
    QDialog dialog(this);
    dialog.setObjectName(u"shortcuts"_s);
    dialog.setWindowTitle(tr("Keyboard shortcuts"));
    auto* table = new QTableWidget(&dialog);
    table->setObjectName(u"shortcutTable"_s);
    table->setColumnCount(2);
    table->setHorizontalHeaderLabels({tr("Keys"), tr("Does")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    QVector<QPair<QString, QString>> rows;
    for (QAction* menu : menuBar()->actions())
        if (menu->menu())
            for (QAction* a : menu->menu()->actions()) {
                const QString text = a->text().remove(u'&');
                if (!a->shortcut().isEmpty())
                    rows.push_back({a->shortcut().toString(QKeySequence::NativeText), text});
                else if (text.contains(u'\t')) // a key the window handles itself
                    rows.push_back({text.section(u'\t', 1), text.section(u'\t', 0, 0)});
            }
    rows.push_back({tr("Click a counter"), tr("Show only that state")});
    rows.push_back({tr("Shift/Ctrl+click"), tr("Select several keys")});
    rows.push_back({tr("→, Page Down"), tr("Race lab, teaching mode: the next step")});
    rows.push_back({tr("F11"), tr("Race lab: projector mode")});
    table->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < rows.size(); ++i) {
        table->setItem(i, 0, new QTableWidgetItem(rows[i].first));
        table->setItem(i, 1, new QTableWidgetItem(rows[i].second));
    }
    table->resizeColumnsToContents();
    table->horizontalHeader()->setStretchLastSection(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(table);
    layout->addWidget(buttons);
    dialog.resize(std::min(560, width()), std::min(520, height()));
    dialog.exec();
}
