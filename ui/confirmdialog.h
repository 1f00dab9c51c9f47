#pragma once

#include <QDialog>
#include <QMap>

class QCheckBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

// Says exactly what an operator action will change (how many keys, in which states) and asks
// why. OK stays disabled until a reason is given.
class ConfirmDialog : public QDialog {
    Q_OBJECT
public:
    enum class Kind { ForceFail, Purge };
    ConfirmDialog(Kind kind, int keys, const QMap<QString, int>& byState, const QMap<QString, int>& byFormat,
                  int leftOut = 0, const QStringList& warnings = {}, QWidget* parent = nullptr);
    QString summary() const;
    QString reason() const;
    bool terminal() const;

private:
    Kind m_kind;
    QLabel* m_summary;
    QLineEdit* m_reason;
    QCheckBox* m_terminal = nullptr;
    QDialogButtonBox* m_buttons;
};
