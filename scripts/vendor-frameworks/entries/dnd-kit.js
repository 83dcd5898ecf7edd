// dnd-kit's core and sortable preset (window.DndKit), on the page's React.
export { DndContext, PointerSensor, KeyboardSensor, closestCenter, useSensor, useSensors } from '@dnd-kit/core';
export { SortableContext, arrayMove, sortableKeyboardCoordinates, useSortable, verticalListSortingStrategy } from '@dnd-kit/sortable';
export { CSS } from '@dnd-kit/utilities';
