#pragma once

#include <QDialog>
#include <QMap>
#include <QStringList>

class QCheckBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

// Says exactly what an operator action will change before it does: on which server, which keys
// (a sample and how many, by state and by format), what happens to them, and - each on its own -
// the live locks and the COMPLETED results it would end. OK stays disabled until a reason is
// given, and for more than one key until their number is typed.
class ConfirmDialog : public QDialog {
    Q_OBJECT
public:
    enum class Kind { ForceFail, Purge };
    struct Request {
        Kind kind = Kind::Purge;
        QString server;     // the URL without its password, and what it is
        int keys = 0;
        QMap<QString, int> byState, byFormat;
        QStringList sample; // the ids of the first few keys
        int leftOut = 0;    // keys that are not records, left out of a filter's bulk action
        int liveLocks = 0;  // STARTED and not stale: their worker still runs
        int completed = 0;  // COMPLETED: their stored result goes (purge)
        int notRecords = 0; // malformed, foreign or unknown keys picked by hand: in use or not, idem cannot say
    };
    static constexpr int kSampleSize = 8;

    explicit ConfirmDialog(const Request& request, QWidget* parent = nullptr);
    QString summary() const; // everything the dialog says, as plain text
    QString reason() const;
    bool terminal() const;
    bool needsTypedCount() const { return m_typed != nullptr; }
    int keyCount() const { return m_request.keys; }

private:
    void updateOk();

    Request m_request;
    QStringList m_said;
    QLineEdit* m_reason;
    QLineEdit* m_typed = nullptr;
    QCheckBox* m_terminal = nullptr;
    QDialogButtonBox* m_buttons;
};
