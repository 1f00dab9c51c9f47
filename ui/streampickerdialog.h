#pragma once

#include "replayrunner.h"

#include <QDialog>

class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;
class QDialogButtonBox;

// Picks a stream of the connected server to capture: the streams (SCAN TYPE stream, never KEYS)
// with their length, filled in when the list arrives; the fields that hold each event's id and
// payload; how many entries at most.
class StreamPickerDialog : public QDialog {
    Q_OBJECT
public:
    StreamPickerDialog(const QString& server, QWidget* parent = nullptr);
    void setStreams(const QVector<StreamEntry>& streams);
    void setFailed(const QString& message);
    idem::CaptureOptions options() const;
    QTableWidget* table() const { return m_table; }

private:
    void updateOk();
    QLabel* m_status;
    QTableWidget* m_table;
    QLineEdit* m_idField;
    QLineEdit* m_payloadField;
    QSpinBox* m_count;
    QDialogButtonBox* m_buttons;
};
