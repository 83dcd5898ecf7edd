// The Material UI components the pages use (window.MUI), on the page's React.
export {
  Autocomplete, Box, Button, ButtonBase, Checkbox, Dialog, DialogActions, DialogContent,
  DialogTitle, FormControl, FormControlLabel, InputLabel, Menu, MenuItem, Select, Switch, Tab,
  Tabs, TextField,
} from '@mui/material';
export { default as DeleteIcon } from '@mui/icons-material/Delete';
export { default as FavoriteBorderIcon } from '@mui/icons-material/FavoriteBorder';
