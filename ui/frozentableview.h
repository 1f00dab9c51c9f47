#pragma once

#include <QTableView>

// A table whose first column (the key's id) stays put while the others scroll sideways: a second
// view of the same model and selection, showing column 0 only, laid over the left edge (Qt's
// frozen column example). A click on its header sorts as the main header does.
class FrozenTableView : public QTableView {
    Q_OBJECT
public:
    explicit FrozenTableView(QWidget* parent = nullptr);
    void setModel(QAbstractItemModel* model) override;
    QTableView* frozenView() const { return m_frozen; }
    // Both views' visible rows drawn again (countdowns, data no longer current): what the model
    // does not announce. The frozen column follows the model, the selection and the palette by
    // itself; it is not repainted with every repaint of the main view, which would paint it twice
    // per batch of rows arriving, each time finding a million rows' positions again.
    void repaintRows();

protected:
    void resizeEvent(QResizeEvent* event) override;
    QModelIndex moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) override;
    void scrollTo(const QModelIndex& index, ScrollHint hint = EnsureVisible) override;
    void updateGeometries() override;
    void changeEvent(QEvent* event) override;

private:
    void updateFrozenGeometry();
    // The frozen view's settings from the main view's, each set only when it differs: this runs on
    // every layout of the table, and setting a header's resize mode, a palette or a font again
    // costs a pass over every row (a million of them)
    void syncFrozen();

    QTableView* m_frozen;
};
